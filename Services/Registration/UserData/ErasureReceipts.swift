import FoundationEssentials
import JSON
import Platform
import Tokens

/// Signs erasure receipts: compact JWS, ES256, `typ erasure-receipt+jwt`, with the registration
/// service's receipt key (`SIGNET_RECEIPT_SIGNING_KEY_FILE`; previous keys stay published from
/// `SIGNET_PREVIOUS_RECEIPT_SIGNING_KEY_FILES`), whose public halves are at
/// `/.well-known/jwks.json`.
///
/// Claims: `iss`, `aud` (the tenant), `jti` (the erasure id), `iat` (completion), `requested_at`
/// and `completed_at` (seconds since the epoch), `tallies` (service → kind → count). The receipt
/// never names the user: the relying party keeps the erasure id with its own record.
struct ErasureReceipts: Sendable {
    static let type = "erasure-receipt+jwt"

    let keys: SigningKeyRing
    let issuer: String

    /// The receipt key from the environment; without a key file a generated one (with a warning:
    /// receipts signed before a restart no longer verify against the published JWKS).
    static func fromEnvironment(_ env: Environment, logger: Logger) throws -> ErasureReceipts {
        let previous = (env.optionalString("SIGNET_PREVIOUS_RECEIPT_SIGNING_KEY_FILES") ?? "")
            .split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        let file = env.optionalString("SIGNET_RECEIPT_SIGNING_KEY_FILE")
        if file == nil {
            logger.warning("SIGNET_RECEIPT_SIGNING_KEY_FILE is not set: erasure receipts are signed with a key that does not survive a restart")
        }
        let ring: SigningKeyRing
        do {
            ring = try SigningKeyRing.load(.init(currentKeyFile: file, previousKeyFiles: previous, allowEphemeralKey: true))
        } catch {
            throw Environment.ConfigurationError(variable: "SIGNET_RECEIPT_SIGNING_KEY_FILE", reason: "\(error)")
        }
        return ErasureReceipts(keys: ring, issuer: env.string("SIGNET_RECEIPT_ISSUER", default: "http://localhost:8080/registration"))
    }

    /// The receipt of a completed erasure.
    func sign(erasureID: String, tenant: String, requestedAt: Date, completedAt: Date, tallies: [String: [String: Int]]) throws -> String {
        var byService: [String: JSONValue] = [:]
        for (service, counts) in tallies {
            byService[service] = .object(counts.mapValues { .int(Int64($0)) })
        }
        let claims = JWTClaims(
            issuer: issuer, audience: [tenant], issuedAt: completedAt, id: erasureID,
            extra: [
                "requested_at": .int(Int64(requestedAt.timeIntervalSince1970)), "completed_at": .int(Int64(completedAt.timeIntervalSince1970)),
                "tallies": .object(byService),
            ])
        return try keys.current.sign(claims, type: Self.type)
    }
}
