import Crypto
import FIDO
import Foundation
import Platform
import ServiceKit

// The registration service: tenants and their RP API keys (admin API), FIDO policies and
// metadata, and WebAuthn credential registration and management.
let logger = Logger(label: "signet.registration")
let env = Environment()
let handles: CeremonyHandles
let sessions: SessionTokenVerifier
let methodSecrets: MethodSecrets
let registrationRules = RegistrationRules.fromEnvironment()
var metadata: MetadataService?
var metadataSource: (any MetadataSource)?
var initialUpdate: MetadataUpdate?
let refreshInterval: Duration
do {
    handles = try CeremonyHandles.fromEnvironment(env, logger: logger)
    sessions = try SessionTokenVerifier.fromEnvironment(env)
    methodSecrets = try MethodSecrets.fromEnvironment(env, logger: logger, service: "registration")
    refreshInterval = .seconds(try env.int("SIGNET_MDS_REFRESH_SECONDS", default: 86_400, range: 60...604_800))
    // FIDO MDS3: a BLOB file (refreshed by the deployment) or URL, and the root it must chain to.
    if let blobFile = env.optionalString("SIGNET_MDS_BLOB_FILE") {
        metadataSource = MetadataFileSource(path: blobFile)
    } else if let blobURL = env.optionalString("SIGNET_MDS_BLOB_URL") {
        guard let url = URL(string: blobURL), url.scheme == "https" || url.scheme == "http" else {
            throw Environment.ConfigurationError(variable: "SIGNET_MDS_BLOB_URL", reason: "expected an http(s) URL")
        }
        metadataSource = MetadataURLSource(url: url)
    }
    if let source = metadataSource {
        let roots: [X509Certificate]
        if let rootFile = env.optionalString("SIGNET_MDS_ROOT_FILE") {
            roots = try X509Certificate.certificates(fromPEM: String(contentsOfFile: rootFile, encoding: .utf8))
        } else {
            roots = try MetadataBLOB.Configuration.production().roots
        }
        let service = MetadataService(configuration: MetadataBLOB.Configuration(roots: roots))
        let update = try await service.load(from: source)
        logger.notice("FIDO metadata loaded", metadata: ["signet.mds.number": "\(update.number)", "signet.mds.revoked_models": "\(update.newlyRevokedAAGUIDs.count)"])
        metadata = service
        initialUpdate = update
    }
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
let loadedMetadata = metadata
let loadedSource = metadataSource
let firstUpdate = initialUpdate
let refresher = Locked<MetadataRefresher?>(nil)
await ServiceRuntime.main(
    service: .registration, migrations: RegistrationMigrations.all, handlers: AuthenticationResults.handlers,
    background: BackgroundServices { context in
        guard let loadedMetadata, let loadedSource else { return [] }
        let r = MetadataRefresher(
            metadata: loadedMetadata, source: loadedSource, context: context, interval: refreshInterval, initialUpdate: firstUpdate)
        refresher.withLock { $0 = r }
        return [r]
    }
) { router, context in
    TenantAdminRoutes(context: context).register(on: &router)
    FIDOPolicyRoutes(context: context).register(on: &router)
    MetadataRoutes(context: context, metadata: loadedMetadata, refresher: refresher.withLock { $0 }).register(on: &router)
    WebAuthnRegistrationRoutes(context: context, handles: handles, metadata: loadedMetadata, sessions: sessions, rules: registrationRules)
        .register(on: &router)
    MethodRoutes(context: context, secrets: methodSecrets, rules: registrationRules, sessions: sessions).register(on: &router)
}
