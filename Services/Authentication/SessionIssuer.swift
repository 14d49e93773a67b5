import Crypto
import FoundationEssentials
import Platform
import Tokens
import JSON
import ServiceKit

/// Issues session tokens: JWTs signed with ES256 by the current key of a rotating key ring,
/// whose public halves are published at `/.well-known/jwks.json` (previous keys stay there
/// until their tokens have expired: `SIGNET_PREVIOUS_SIGNING_KEY_FILES`).
///
/// Claims: `iss`, `sub` (username), `aud` (tenant), `iat`, `exp`, `auth_time`, `amr`, `sid`,
/// `jti`, and `acr` (the sequence completed) from sign-in flows or `cid` (credential id) from
/// the plain WebAuthn sign-in. Bearer tokens (no `cnf`).
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

    /// A token of the plain WebAuthn sign-in: `amr` in RFC 8176 terms.
    func issue(tenant: String, username: String, credentialID: String, userVerified: Bool, sessionID: String, at now: Date) throws -> (token: String, expiresAt: Date) {
        // RFC 8176: "hwk" proof of possession of a key; "user" presence; "mfa" when the
        // authenticator also verified the user (PIN or biometric).
        let amr = userVerified ? ["hwk", "user", "mfa"] : ["hwk", "user"]
        return try issue(tenant: tenant, username: username, amr: amr, acr: nil, credentialID: credentialID, sessionID: sessionID, at: now)
    }

    /// A registration-only token for the sign-in `signinID`, whose registration rules
    /// ENFORCE_REGISTRATION: the `sign_up` claim (the registration service admits it on the
    /// routes that register a method, as a sign-up token, and refuses it everywhere else) and
    /// `signin`, which only ``SignInCoordinator`` exchanges for a session. No `sid`, no session
    /// row: it is not a session. Its `aud` is the registration audience, not the tenant, so
    /// that a verifier of sessions never accepts it.
    func issueRegistrationOnly(tenant: String, username: String, signinID: String, lifetime: TimeInterval, at now: Date) throws -> (token: String, expiresAt: Date) {
        let expires = now.addingTimeInterval(lifetime)
        let claims = JWTClaims(
            issuer: issuer, subject: username, audience: [SessionTokenVerifier.registrationAudience(tenant: tenant)], expiresAt: expires,
            issuedAt: now, id: SecureRandom.token(byteCount: 16), extra: ["sign_up": .bool(true), "signin": .string(signinID)])
        return (try keys.current.sign(claims), expires)
    }

    /// A token with the given `amr` (for sign-in flows: the completed methods) and `acr`.
    func issue(
        tenant: String, username: String, amr: [String], acr: String?, credentialID: String?, sessionID: String, at now: Date
    ) throws -> (token: String, expiresAt: Date) {
        let expires = now.addingTimeInterval(lifetime)
        var extra: [String: JSONValue] = [
            "auth_time": .int(Int64(now.timeIntervalSince1970)), "amr": .array(amr.map(JSONValue.string)), "sid": .string(sessionID),
        ]
        if let acr { extra["acr"] = .string(acr) }
        if let credentialID { extra["cid"] = .string(credentialID) }
        let claims = JWTClaims(
            issuer: issuer, subject: username, audience: [tenant], expiresAt: expires, issuedAt: now, id: SecureRandom.token(byteCount: 16),
            extra: extra)
        return (try keys.current.sign(claims), expires)
    }
}
