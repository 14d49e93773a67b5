import Crypto
import FIDO
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// The authentication service: WebAuthn sign-in over its own read model of credentials,
/// adaptive sign-in flows (rulesets, methods, anti-hammering), and sessions.
public enum AuthenticationService: SignetService {
    public struct Configuration: Sendable {
        let handles: CeremonyHandles
        let issuer: SessionIssuer
        let codeKeys: CodeMethodKeys
        let calls: InternalCalls
        /// `SIGNET_UAF_APP_ID_BASE` (see RegistrationService): UAF AppIDs are made from it.
        let uafAppIDBase: String
        /// `SIGNET_UAF_APP_ID_CHECK` (``UAFAppIDCheck``): refuse to start on a mismatch, or warn.
        let uafAppIDCheckEnforced: Bool
        /// `SIGNET_UAF_TLS_SERVER_CERTIFICATES` (FIDO's ``UAFServerCertificate``): UAF channel binding.
        let uafServerCertificates: [UAFServerCertificate]
        /// The oob-notification service, for `oob_push` and `qr` (`SIGNET_OOB_URL`).
        let oobURL: String
        /// The transaction service, for the tcToken of a confirmed transaction (`SIGNET_TRANSACTION_URL`).
        let transactionURL: String
        /// The registration service, which opens the accounts of sign-ups with a profile or
        /// without a username (`SIGNET_REGISTRATION_URL`).
        let registrationURL: String
        /// A user's device without a call for this long is inactive to rules
        /// (`SIGNET_OOB_INACTIVE_DAYS`, the oob service's setting).
        let deviceInactiveAfter: TimeInterval
        /// Credentials kept parsed for sign-in (`SIGNET_CREDENTIAL_CACHE_SIZE`; 0 keeps none).
        let credentialCacheSize: Int
    }

    public static let name = ServiceName.authentication
    public static var migrations: [Migration] { AuthenticationMigrations.all }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        Configuration(
            handles: try CeremonyHandles.fromEnvironment(env, logger: logger),
            issuer: try SessionIssuer.fromEnvironment(env),
            codeKeys: CodeMethodKeys(
                methodSecrets: try ServiceKeys.sealingKeys("SIGNET_METHOD_SECRET_KEY", env, logger: logger),
                delivery: try ServiceKeys.sealingKeys("SIGNET_DELIVERY_KEY", env, logger: logger),
                codeHashKey: try ServiceKeys.key("SIGNET_OTP_HASH_KEY", env, logger: logger),
                acceptedCodeHashKeys: try ServiceKeys.acceptedKeys("SIGNET_OTP_HASH_KEY", env)),
            calls: try InternalCalls.fromEnvironment(env, service: "authentication"),
            uafAppIDBase: try uafAppIDBase(env),
            uafAppIDCheckEnforced: try UAFAppIDCheck.enforces(env),
            uafServerCertificates: try UAFServerCertificate.fromEnvironment(env),
            oobURL: env.string("SIGNET_OOB_URL", default: "http://127.0.0.1:8084"),
            transactionURL: env.string("SIGNET_TRANSACTION_URL", default: "http://127.0.0.1:8083"),
            registrationURL: env.string("SIGNET_REGISTRATION_URL", default: "http://127.0.0.1:8081"),
            deviceInactiveAfter: Double(try env.int("SIGNET_OOB_INACTIVE_DAYS", default: 90, range: 1...3650)) * 86_400,
            credentialCacheSize: try env.int("SIGNET_CREDENTIAL_CACHE_SIZE", default: CredentialCache.defaultCapacity, range: 0...10_000_000))
    }

    /// `SIGNET_UAF_APP_ID_BASE`, read as the registration service reads it: both must agree.
    static func uafAppIDBase(_ env: Environment) throws -> String {
        let base = env.string("SIGNET_UAF_APP_ID_BASE", default: "http://localhost:8080/registration")
        guard let url = URL(string: base), url.scheme == "https" || url.scheme == "http", url.host != nil, !base.hasSuffix("/") else {
            throw Environment.ConfigurationError(variable: "SIGNET_UAF_APP_ID_BASE", reason: "expected an http(s) URL without a trailing slash")
        }
        return base
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        let codeKeys = configuration.codeKeys
        let issuer = configuration.issuer
        let ceremony = AssertionCeremony(context: context, credentialCacheSize: configuration.credentialCacheSize)
        let policies = PolicyStore(pool: context.pool)
        let antiHammering = AntiHammering(context: context)
        let sessions = SessionStore(context: context, issuer: issuer, handles: configuration.handles)
        let webAuthn = WebAuthnAuthenticationRoutes(
            context: context, handles: configuration.handles, sessions: issuer, ceremony: ceremony, policies: policies, antiHammering: antiHammering)
        let uafCeremony = UAFAssertionCeremony(
            context: context, appIDBase: configuration.uafAppIDBase, serverCertificates: configuration.uafServerCertificates)
        let uaf = UAFAuthenticationRoutes(
            context: context, handles: configuration.handles, sessions: issuer, ceremony: uafCeremony, policies: policies,
            transactions: TransactionTokens(calls: configuration.calls, transactionURL: configuration.transactionURL), antiHammering: antiHammering)
        let coordinator = SignInCoordinator(
            context: context, policies: policies,
            methods: [
                FIDO2Method(ceremony: ceremony), FIDO2Method(ceremony: ceremony, name: "fido2_uv", userVerification: "required"),
                UAFMethod(ceremony: uafCeremony),
                OneTimeCodeMethod(name: "email_otp", channel: "email", keys: codeKeys, pool: context.pool),
                OneTimeCodeMethod(name: "sms_otp", channel: "sms", keys: codeKeys, pool: context.pool), TOTPMethod(keys: codeKeys, pool: context.pool, subjectKey: context.configuration.subjectKey),
                ExternalJWTMethod(policies: policies, pool: context.pool), ExternalPasswordMethod(policies: policies),
                OOBPushMethod(calls: configuration.calls, oobURL: configuration.oobURL, pool: context.pool),
                QRMethod(calls: configuration.calls, oobURL: configuration.oobURL),
            ],
            antiHammering: antiHammering, facts: UserFactsLoader(context: context, antiHammering: antiHammering, deviceInactiveAfter: configuration.deviceInactiveAfter), sessions: sessions,
            ceremony: ceremony, flows: SignInFlowStore(pool: context.pool), limiter: RateLimiter(),
            transactions: TransactionTokens(calls: configuration.calls, transactionURL: configuration.transactionURL))
        let policyAdmin = PolicyAdminRoutes(context: context, policies: policies, catalogs: coordinator.catalogs)
        let signIn = SignInRoutes(coordinator: coordinator, calls: configuration.calls)
        let sessionRoutes = SessionRoutes(context: context, sessions: sessions, antiHammering: antiHammering)
        let signUp = SignUpRoutes(
            context: context, issuer: issuer, sessions: sessions, calls: configuration.calls, registrationURL: configuration.registrationURL)
        let qrRegistration = QRRegistrationTokens(issuer: issuer, calls: configuration.calls)

        var background: [any Service] = [
            TransientDataPurger(pool: context.pool, logger: context.logger),
            UAFAppIDCheck(pool: context.pool, ceremony: uafCeremony, enforce: configuration.uafAppIDCheckEnforced, logger: context.logger),
        ]
        do {
            // Every replica drops its compiled policy when any replica changes it.
            background.append(
                try BroadcastListener(
                    configuration: context.configuration, topics: [Topic.authenticationPolicy], types: [AuthenticationPolicyChanged.eventType],
                    logger: context.logger
                ) { envelope in
                    guard envelope.type == AuthenticationPolicyChanged.eventType,
                        let change = try? EventCoding.decode(AuthenticationPolicyChanged.self, from: envelope.data)
                    else { return }
                    policies.invalidate(change.tenantId)
                })
        } catch {
            context.logger.error("policy change listener not started; policies refresh within a minute", metadata: [LogKey.error: "\(error)"])
        }
        if let resealer = KeyResealer(columns: [MethodSecretsColumn.column(keys: configuration.codeKeys.methodSecrets)], context: context) {
            background.append(resealer)
        }
        var handlers = TenantDirectory.readModelHandlers
        handlers.merge(CredentialReadModel.handlers)
        handlers.merge(UAFReadModel.handlers)
        handlers.merge(MethodReadModel.handlers)
        handlers.merge(TransactionReadModel.handlers)
        handlers.merge(DeviceReadModel.handlers)
        let userData = AuthenticationUserData()
        handlers.merge(
            UserErasure.handlers(
                service: name, store: userData, subjectKey: context.configuration.subjectKey,
                usernames: .registration(context: context)))
        handlers.merge(ceremony.fidoPolicies.handlers)
        return ServiceAssembly(
            routes: { router in
                webAuthn.register(on: &router)
                uaf.register(on: &router)
                policyAdmin.register(on: &router)
                signIn.register(on: &router)
                sessionRoutes.register(on: &router)
                signUp.register(on: &router)
                qrRegistration.register(on: &router)
                UserErasure.registerExport(on: &router, context: context, store: userData)
            }, handlers: handlers, background: background)
    }
}
