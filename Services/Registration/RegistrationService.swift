import Crypto
import FIDO
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// The registration service: tenants and their RP API keys (admin API), FIDO policies and
/// metadata, WebAuthn credential registration and management, and other methods.
public enum RegistrationService: SignetService {
    public struct Configuration: Sendable {
        let handles: CeremonyHandles
        let sessions: SessionTokenVerifier
        let methodSecrets: MethodSecrets
        let rules: RegistrationRules
        let metadata: Metadata?
        /// The registration service's public base URL, from which UAF AppIDs are made.
        let uafAppIDBase: String
        /// `SIGNET_UAF_TLS_SERVER_CERTIFICATES` (FIDO's ``UAFServerCertificate``): UAF channel binding.
        let uafServerCertificates: [UAFServerCertificate]
        let receipts: ErasureReceipts
        let userData: UserDataExport.Settings
        let retentionInterval: Duration

        /// FIDO MDS3: the service, where its BLOB comes from, and the first load (nil when it
        /// failed: the service starts without, see ``configuration(_:logger:)``) with its text.
        struct Metadata: Sendable {
            let service: MetadataService
            let source: any MetadataSource
            let refreshInterval: Duration
            let firstUpdate: MetadataUpdate?
            let firstText: String?
            /// Why the first load failed (a ``MetadataError`` code).
            let firstFailure: String?
        }
    }

    public static let name = ServiceName.registration
    public static var migrations: [Migration] { RegistrationMigrations.all }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        let refreshInterval = Duration.seconds(try env.int("SIGNET_MDS_REFRESH_SECONDS", default: 86_400, range: 60...604_800))
        var metadata: Configuration.Metadata?
        // FIDO MDS3: a BLOB file (refreshed by the deployment) or URL, and the root it must chain to.
        if let source = try metadataSource(env) {
            let roots: [X509Certificate]
            if let rootFile = env.optionalString("SIGNET_MDS_ROOT_FILE") {
                roots = try X509Certificate.certificates(fromPEM: String(contentsOfFile: rootFile, encoding: .utf8))
            } else {
                roots = try MetadataBLOB.Configuration.production().roots
            }
            let service = MetadataService(configuration: MetadataBLOB.Configuration(roots: roots))
            // The source (a third party's server, its CRLs, or a file the deployment refreshes)
            // may be down when a replica starts: the service starts all the same, and the
            // refresher installs the BLOB the deployment kept, then tries the source again soon.
            do {
                let (update, text) = try await service.loadKeepingText(from: source)
                logger.notice(
                    "FIDO metadata loaded",
                    metadata: [
                        "signet.mds.number": "\(update.number)", "signet.mds.revoked_models": "\(update.newlyRevokedAAGUIDs.count)",
                        "signet.mds.revocation": .string(update.revocation.rawValue),
                    ])
                metadata = .init(
                    service: service, source: source, refreshInterval: refreshInterval, firstUpdate: update, firstText: text, firstFailure: nil)
            } catch {
                logger.error(
                    "the FIDO metadata could not be loaded at start-up; starting without it (the copy kept in the database is installed if there is one, and the source is tried again soon)",
                    metadata: [LogKey.error: "\(error)"])
                metadata = .init(
                    service: service, source: source, refreshInterval: refreshInterval, firstUpdate: nil, firstText: nil,
                    firstFailure: error.code.rawValue)
            }
        }
        return Configuration(
            handles: try CeremonyHandles.fromEnvironment(env, logger: logger),
            sessions: try SessionTokenVerifier.fromEnvironment(env),
            methodSecrets: try MethodSecrets.fromEnvironment(env, logger: logger, service: "registration"),
            rules: try RegistrationRules.fromEnvironment(env),
            metadata: metadata,
            uafAppIDBase: try uafAppIDBase(env),
            uafServerCertificates: try UAFServerCertificate.fromEnvironment(env),
            receipts: try ErasureReceipts.fromEnvironment(env, logger: logger),
            userData: try UserDataExport.Settings.fromEnvironment(env),
            retentionInterval: try RetentionPurger.interval(env))
    }

    /// Where the FIDO metadata BLOB comes from: `SIGNET_MDS_BLOB_FILE` (a file the deployment
    /// refreshes) or else `SIGNET_MDS_BLOB_URL`, which must be `https` (so must its redirects,
    /// ``MetadataURLSource``); nil when neither is set.
    ///
    /// The BLOB is signed, but over plain `http` anyone on the path could keep a newer BLOB —
    /// and the revocations it brings — from arriving while the old one stays in force.
    static func metadataSource(_ env: Environment) throws -> (any MetadataSource)? {
        if let blobFile = env.optionalString("SIGNET_MDS_BLOB_FILE") { return MetadataFileSource(path: blobFile) }
        guard let blobURL = env.optionalString("SIGNET_MDS_BLOB_URL") else { return nil }
        guard let url = URL(string: blobURL), let source = MetadataURLSource(url: url) else {
            throw Environment.ConfigurationError(variable: "SIGNET_MDS_BLOB_URL", reason: "expected an https URL with a host")
        }
        return source
    }

    /// `SIGNET_UAF_APP_ID_BASE`: the registration service's URL as UAF clients reach it (the
    /// gateway's `/registration`); a tenant's AppID is `<base>/v1/tenants/<tenant>/uaf/facets`.
    /// The authentication service reads the same variable and must be given the same value.
    static func uafAppIDBase(_ env: Environment) throws -> String {
        let base = env.string("SIGNET_UAF_APP_ID_BASE", default: "http://localhost:8080/registration")
        guard let url = URL(string: base), url.scheme == "https" || url.scheme == "http", url.host != nil, !base.hasSuffix("/") else {
            throw Environment.ConfigurationError(variable: "SIGNET_UAF_APP_ID_BASE", reason: "expected an http(s) URL without a trailing slash")
        }
        return base
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        // Session tokens of revoked sessions are refused on every route that takes them.
        let sessions = configuration.sessions.checkingRevocations(SessionRevocations(pool: context.pool))
        let refresher = configuration.metadata.map {
            MetadataRefresher(
                metadata: $0.service, source: $0.source, context: context, interval: $0.refreshInterval, initialUpdate: $0.firstUpdate,
                initialText: $0.firstText, initialFailure: $0.firstFailure)
        }
        let users = UserStore(pool: context.pool)
        let credentials = CredentialStore(context: context)
        let methods = MethodStore(context: context)
        let policies = FIDOPolicyStore(pool: context.pool, metadata: configuration.metadata?.service)
        let tenantAdmin = TenantAdminRoutes(context: context, tenants: TenantStore(context: context), keys: APIKeyStore(context: context))
        let policyAdmin = FIDOPolicyRoutes(context: context, policies: policies)
        let metadata = MetadataRoutes(context: context, metadata: configuration.metadata?.service, refresher: refresher)
        let ceremony = WebAuthnRegistrationCeremony(
            tenants: context.tenants, handles: configuration.handles, policies: policies, credentials: credentials,
            metadata: configuration.metadata?.service, rules: configuration.rules)
        let webAuthn = WebAuthnRegistrationRoutes(context: context, ceremony: ceremony, credentials: credentials, sessions: sessions)
        let uaf = UAFRegistrationRoutes(
            context: context, handles: configuration.handles, store: UAFStore(context: context), sessions: sessions,
            metadata: configuration.metadata?.service, appIDBase: configuration.uafAppIDBase,
            serverCertificates: configuration.uafServerCertificates)
        let enrollment = MethodEnrollment(
            tenants: context.tenants, users: users, methods: methods, secrets: configuration.methodSecrets, rules: configuration.rules,
            budget: MethodSetupBudget(
                pool: context.pool, key: configuration.methodSecrets.codeHashKey, acceptedKeys: configuration.methodSecrets.acceptedCodeHashKeys), subjectKey: context.configuration.subjectKey)
        let signUps = SignUpAccounts(
            context: context, users: users, calls: configuration.methodSecrets.calls, piiURL: configuration.methodSecrets.piiURL)
        let credentialLookup = InternalCredentialLookup(credentials: credentials, calls: configuration.methodSecrets.calls)
        let methodRoutes = MethodRoutes(context: context, enrollment: enrollment, methods: methods, sessions: sessions)
        let erasures = ErasureStore(context: context, receipts: configuration.receipts)
        let userData = UserDataRoutes(
            context: context, export: UserDataExport(context: context, settings: configuration.userData), erasures: erasures,
            sessions: sessions)
        let retention = RetentionStore(context: context)
        let retentionRoutes = RetentionRoutes(context: context, store: retention)
        let userSearch = UserSearchRoutes(context: context, users: users)
        let models = MetadataModelsRoutes(context: context, metadata: configuration.metadata?.service)
        let purger = RetentionPurger(interval: configuration.retentionInterval, logger: context.logger) { try await retention.purge(now: $0) }
        var handlers = AuthenticationResults.handlers
        handlers.merge(SessionRevocations.handlers)
        handlers.merge(
            UserErasure.handlers(
                service: name, store: RegistrationUserData(), subjectKey: context.configuration.subjectKey,
                usernames: .local { tenant, id, conn in try await ErasureStore.username(erasure: id, tenant: tenant, on: conn) }))
        handlers.merge(ErasureStore.handlers(receipts: configuration.receipts, subjectKey: context.configuration.subjectKey))
        // Registration owns the tenants: it keeps no read model of them.
        return ServiceAssembly(
            routes: { router in
                tenantAdmin.register(on: &router)
                policyAdmin.register(on: &router)
                metadata.register(on: &router)
                webAuthn.register(on: &router)
                uaf.register(on: &router)
                methodRoutes.register(on: &router)
                signUps.register(on: &router)
                credentialLookup.register(on: &router)
                userData.register(on: &router)
                retentionRoutes.register(on: &router)
                userSearch.register(on: &router)
                models.register(on: &router)
            }, handlers: handlers,
            background: (refresher.map { [$0] } ?? []) + [purger]
                + (KeyResealer(columns: [MethodStore.sealedSecrets(keys: configuration.methodSecrets.methodSecrets, subjectKey: context.configuration.subjectKey)], context: context).map { [$0] } ?? []))
    }
}
