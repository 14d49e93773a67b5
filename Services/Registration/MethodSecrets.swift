import Crypto
import Platform
import ServiceKit

/// Secrets the non-FIDO methods need, from the environment.
struct MethodSecrets: Sendable {
    /// Seals TOTP secrets (shared with the authentication service).
    let methodSecrets: SealingKeys
    /// Seals one-time codes to the oob-notification service.
    let delivery: SealingKeys
    /// Keys the stored hashes of one-time codes.
    let codeHashKey: [UInt8]
    /// Earlier code-hash keys (`SIGNET_OTP_HASH_KEY_ACCEPTED`): codes hashed under them still match.
    let acceptedCodeHashKeys: [[UInt8]]
    /// Calls the pii service, which keeps e-mail addresses and phone numbers.
    let calls: InternalCalls
    let piiURL: String

    /// From `SIGNET_METHOD_SECRET_KEY`, `SIGNET_DELIVERY_KEY`, `SIGNET_OTP_HASH_KEY` (read by
    /// `ServiceKeys`), the internal token and `SIGNET_PII_URL`.
    static func fromEnvironment(_ env: Environment = Environment(), logger: Logger, service: String) throws -> MethodSecrets {
        MethodSecrets(
            methodSecrets: try ServiceKeys.sealingKeys("SIGNET_METHOD_SECRET_KEY", env, logger: logger),
            delivery: try ServiceKeys.sealingKeys("SIGNET_DELIVERY_KEY", env, logger: logger),
            codeHashKey: try ServiceKeys.key("SIGNET_OTP_HASH_KEY", env, logger: logger),
            acceptedCodeHashKeys: try ServiceKeys.acceptedKeys("SIGNET_OTP_HASH_KEY", env),
            calls: try InternalCalls.fromEnvironment(env, service: service),
            piiURL: env.string("SIGNET_PII_URL", default: "http://127.0.0.1:8085"))
    }
}
