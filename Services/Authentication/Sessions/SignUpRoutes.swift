import Crypto
import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceKit
import Tokens

/// Sign-up: the RP opens a sign-up session for a new username and gets a token whose
/// `sign_up` claim lets the client register methods (registration service) and nothing else;
/// once the user has a credential or method, finishing turns it into a normal session.
///
/// - `POST /v1/tenants/{tenant}/signups` (RP API key) `{"username"}` → 201 `{"signUpToken","expiresAt"}`;
///   409 `username_taken` when the user already has credentials or methods.
/// - `POST /v1/tenants/{tenant}/signups/finish` `{"signUpToken"}` → `{"sessionToken","refreshToken","expiresAt"}`;
///   409 `nothing_registered` until a method is active; each token finishes once.
struct SignUpRoutes: Sendable {
    let context: ServiceContext
    let issuer: SessionIssuer
    let sessions: SessionStore
    static let lifetime: TimeInterval = 1800

    struct Start: Codable {
        var username: String
    }

    struct Started: Codable {
        var signUpToken: String
        var expiresAt: Date
    }

    struct Finish: Codable {
        var signUpToken: String
    }

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/signups", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(Start.self)
            try UsernameRules.require(body.username)
            guard try await registeredCount(tenant: tenant, username: body.username) == 0 else {
                throw HTTPError(.usernameTaken, detail: "This user already has methods; sign in instead.")
            }
            let now = Date()
            let expires = now.addingTimeInterval(Self.lifetime)
            let claims = JWTClaims(
                issuer: issuer.issuer, subject: body.username, audience: [SessionTokenVerifier.registrationAudience(tenant: tenant)], expiresAt: expires, issuedAt: now, id: SecureRandom.token(byteCount: 16),
                extra: ["sign_up": .bool(true)])
            let token = try issuer.keys.current.sign(claims)
            ctx.logger.info("sign-up opened")
            return try .json(Started(signUpToken: token, expiresAt: expires), status: 201, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signups/finish", .open) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(Finish.self)
            let verifier = issuer.keys.verifier(options: JWTValidationOptions(
                issuer: issuer.issuer, audience: SessionTokenVerifier.registrationAudience(tenant: tenant), requiredClaims: ["sub", "jti", "sign_up"]))
            let invalid = HTTPError(.invalidSignUpToken, detail: "Open a new sign-up.")
            // A sign-in's registration-only token (`signin` claim) is exchanged by its sign-in
            // once the rules no longer enforce registering, never here.
            guard let jwt = try? verifier.verify(body.signUpToken, now: Date()), jwt.claims[claim: "sign_up"] == .bool(true),
                jwt.claims[claim: "signin"] == nil, let username = jwt.claims.subject, let jti = jwt.claims.id, let expires = jwt.claims.expiresAt
            else { throw invalid }
            guard try await registeredCount(tenant: tenant, username: username) > 0 else {
                throw HTTPError(.nothingRegistered, detail: "Register a method first.")
            }
            let now = Date()
            let issued = try await context.withTransaction { conn -> SessionStore.Issued in
                // Each sign-up token finishes once (its id is kept until it would have expired).
                guard try await SignUpStore.useToken(jti: jti, expiresAt: expires, on: conn) else { throw invalid }
                return try await sessions.create(
                    tenant: tenant, username: username, userHandle: nil, amr: ["sign_up"], acr: "sign_up", credentialID: nil, at: now, on: conn)
            }
            ctx.logger.info("sign-up finished")
            return try .json(SessionTokens(sessionToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt), headers: [("Cache-Control", "no-store")])
        }
    }

    func registeredCount(tenant: String, username: String) async throws -> Int {
        try await SignUpStore(pool: context.pool, subjectKey: context.configuration.subjectKey).registeredCount(tenant: tenant, username: username)
    }
}
