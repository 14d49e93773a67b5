import Crypto
import Foundation
import Platform
import Tokens

/// Issues session tokens: JWTs signed with ES256 by the current key of a rotating key ring,
/// whose public halves are published at `/.well-known/jwks.json`.
///
/// Claims: `iss`, `sub` (username), `aud` (tenant), `iat`, `exp`, `auth_time`, `amr`, `sid`,
/// `jti`, `cid` (credential id). Bearer tokens (no `cnf`).
struct SessionIssuer: Sendable {
    /// A new session id (`sid`): 128 random bits, base64url.
    static func newSessionID() -> String { SecureRandom.token(byteCount: 16) }

    let keys: SigningKeyRing
    let issuer: String
    let lifetime: TimeInterval

    static func fromEnvironment(_ env: Environment = Environment()) throws -> SessionIssuer {
        let ring = try SigningKeyRing.load(SigningKeyRing.Configuration(environment: env.values))
        return SessionIssuer(
            keys: ring, issuer: env.string("SIGNET_SESSION_ISSUER", default: "http://localhost:8080/authentication"),
            lifetime: TimeInterval(try env.int("SIGNET_SESSION_TTL_SECONDS", default: 900, range: 60...86_400)))
    }

    func issue(tenant: String, username: String, credentialID: String, userVerified: Bool, sessionID: String, at now: Date) throws -> (token: String, expiresAt: Date) {
        let expires = now.addingTimeInterval(lifetime)
        // RFC 8176: "hwk" proof of possession of a key; "user" presence; "mfa" when the
        // authenticator also verified the user (PIN or biometric).
        let amr: [JSONValue] = userVerified ? [.string("hwk"), .string("user"), .string("mfa")] : [.string("hwk"), .string("user")]
        let claims = JWTClaims(
            issuer: issuer, subject: username, audience: [tenant], expiresAt: expires, issuedAt: now,
            id: SecureRandom.token(byteCount: 16),
            extra: [
                "auth_time": .int(Int64(now.timeIntervalSince1970)), "amr": .array(amr),
                "sid": .string(sessionID), "cid": .string(credentialID),
            ])
        return (try keys.current.sign(claims), expires)
    }
}
