import Crypto
import Foundation
import Platform
import Schema
import ServiceKit

// The authentication service: WebAuthn sign-in over its own read model of credentials,
// adaptive sign-in flows (rulesets, methods, anti-hammering), and sessions.
let logger = Logger(label: "signet.authentication")
let handles: CeremonyHandles
let issuer: SessionIssuer
let codeKeys: CodeMethodKeys
do {
    handles = try CeremonyHandles.fromEnvironment(logger: logger)
    issuer = try SessionIssuer.fromEnvironment()
    codeKeys = CodeMethodKeys(
        methodSecrets: try AES256GCM(key: try ServiceKeys.key("SIGNET_METHOD_SECRET_KEY", logger: logger)),
        delivery: try AES256GCM(key: try ServiceKeys.key("SIGNET_DELIVERY_KEY", logger: logger)),
        codeHashKey: try ServiceKeys.key("SIGNET_OTP_HASH_KEY", logger: logger))
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
let policies = Locked<PolicyStore?>(nil)
await ServiceRuntime.main(
    service: .authentication, migrations: AuthenticationMigrations.all, handlers: CredentialReadModel.handlers,
    background: BackgroundServices { context in
        var services: [any Service] = [TransientDataPurger(pool: context.pool, logger: context.logger)]
        do {
            // Every replica drops its compiled policy when any replica changes it.
            services.append(
                try BroadcastListener(
                    configuration: context.configuration, topics: [Topic.authentication], types: [AuthenticationPolicyChanged.eventType],
                    logger: context.logger
                ) { envelope in
                    guard envelope.type == AuthenticationPolicyChanged.eventType,
                        let change = try? EventCoding.decode(AuthenticationPolicyChanged.self, from: envelope.data)
                    else { return }
                    policies.withLock { $0 }?.invalidate(change.tenantId)
                })
        } catch {
            context.logger.error("policy change listener not started; policies refresh within a minute", metadata: [LogKey.error: "\(error)"])
        }
        return services
    }
) { router, context in
    let ceremony = AssertionCeremony(context: context)
    let store = PolicyStore(pool: context.pool)
    policies.withLock { $0 = store }
    let antiHammering = AntiHammering(context: context)
    let sessions = SessionStore(context: context, issuer: issuer)
    WebAuthnAuthenticationRoutes(context: context, handles: handles, sessions: issuer, ceremony: ceremony).register(on: &router)
    PolicyAdminRoutes(context: context, policies: store).register(on: &router)
    SignInRoutes(
        context: context, policies: store,
        methods: [
            FIDO2Method(ceremony: ceremony), OneTimeCodeMethod(name: "email_otp", channel: "email", keys: codeKeys, pool: context.pool),
            OneTimeCodeMethod(name: "sms_otp", channel: "sms", keys: codeKeys, pool: context.pool), TOTPMethod(keys: codeKeys, pool: context.pool),
            ExternalJWTMethod(policies: store), ExternalPasswordMethod(policies: store),
        ],
        antiHammering: antiHammering,
        facts: UserFactsLoader(context: context, antiHammering: antiHammering), sessions: sessions, ceremony: ceremony,
        calls: InternalCalls.fromEnvironment(service: "authentication")
    ).register(on: &router)
    SessionRoutes(context: context, sessions: sessions, antiHammering: antiHammering).register(on: &router)
    SignUpRoutes(context: context, issuer: issuer, sessions: sessions).register(on: &router)
}
