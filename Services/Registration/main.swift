import Crypto
import FIDO
import Foundation
import Platform
import ServiceKit

// The registration service: tenants and their RP API keys (admin API), FIDO policies, and
// WebAuthn credential registration and management.
let logger = Logger(label: "signet.registration")
let env = Environment()
let handles: CeremonyHandles
var metadata: MetadataService?
do {
    handles = try CeremonyHandles.fromEnvironment(env, logger: logger)
    // FIDO MDS3: a BLOB file (refreshed by the deployment) and the root it must chain to.
    if let blobFile = env.optionalString("SIGNET_MDS_BLOB_FILE") {
        let roots: [X509Certificate]
        if let rootFile = env.optionalString("SIGNET_MDS_ROOT_FILE") {
            roots = try X509Certificate.certificates(fromPEM: String(contentsOfFile: rootFile, encoding: .utf8))
        } else {
            roots = try MetadataBLOB.Configuration.production().roots
        }
        let service = MetadataService(configuration: MetadataBLOB.Configuration(roots: roots))
        let update = try await service.load(fromFile: blobFile)
        logger.notice("FIDO metadata loaded", metadata: ["signet.mds.revoked_models": "\(update.newlyRevokedAAGUIDs.count)"])
        metadata = service
    }
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
let loadedMetadata = metadata
await ServiceRuntime.main(service: .registration, migrations: RegistrationMigrations.all) { router, context in
    TenantAdminRoutes(context: context).register(on: &router)
    FIDOPolicyRoutes(context: context).register(on: &router)
    WebAuthnRegistrationRoutes(context: context, handles: handles, metadata: loadedMetadata).register(on: &router)
}
