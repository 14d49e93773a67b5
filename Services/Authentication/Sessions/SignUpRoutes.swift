import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit
import Tokens

/// Sign-up: the RP opens a sign-up session for a new user and gets a token whose `sign_up`
/// claim lets the client register methods (registration service) and nothing else; once the
/// user has a credential or method, finishing turns it into a normal session.
///
/// - `POST /v1/tenants/{tenant}/signups` (RP API key) `{"username"?, "profile"?}` → 201
///   `{"signUpToken","expiresAt","username","userHandle"?,"passkeyOnly"}`; 409 `username_taken`
///   when the user already has credentials or methods.
///   - `profile` (`fullName`, `email`, `phone`, each optional) is checked here (400
///     `invalid_full_name`, `invalid_email`, `invalid_phone`) and kept by the pii vault, under
///     the account the registration service opens for it at once; no value is logged, put in
///     the token or in an event.
///   - Without `username`, a passkey-only account: the server assigns an opaque username (`u_`
///     and 128 random bits, neither guessable nor personal) and the user handle; the user picks
///     a display name in the WebAuthn registration options, registers a discoverable
///     credential, and signs in without a username.
/// - `POST /v1/tenants/{tenant}/signups/finish` `{"signUpToken"}` → `{"sessionToken","refreshToken","expiresAt"}`;
///   409 `nothing_registered` until a method is active; each token finishes once.
struct SignUpRoutes: Sendable {
    let context: ServiceContext
    let issuer: SessionIssuer
    let sessions: SessionStore
    /// Opens sign-up accounts at the registration service (`SIGNET_REGISTRATION_URL`).
    let calls: InternalCalls
    let registrationURL: String
    static let lifetime: TimeInterval = 1800

    struct Finish: Codable {
        var signUpToken: String
    }

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/signups", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(SignUpStartRequest.self)
            // The registration service checks the profile again when it opens the account.
            if let refusal = body.profile?.refusal { throw HTTPError(.profileRefused(refusal.member), detail: refusal.detail, field: refusal.field) }
            let passkeyOnly = body.username == nil
            // A passkey-only account's username: opaque, 128 random bits, never shown as a name.
            let username = body.username ?? "u_" + Hex.encode(SecureRandom.bytes(16))
            try UsernameRules.require(username)
            guard try await registeredCount(tenant: tenant, username: username) == 0 else {
                throw HTTPError(.usernameTaken, detail: "This user already has methods; sign in instead.")
            }
            // The account is opened now when the sign-up needs it before the first method: a
            // profile to vault under its user handle, or a passkey-only account.
            var userHandle: String?
            if passkeyOnly || !(body.profile?.isEmpty ?? true) {
                let account = try await calls.post(
                    "\(registrationURL)/v1/internal/tenants/\(tenant)/sign-ups",
                    SignUpAccountRequest(username: username, passkeyOnly: passkeyOnly, profile: body.profile), as: SignUpAccount.self)
                userHandle = account.userHandle
            }
            let now = Date()
            let expires = now.addingTimeInterval(Self.lifetime)
            let claims = JWTClaims(
                issuer: issuer.issuer, subject: username, audience: [SessionTokenVerifier.registrationAudience(tenant: tenant)], expiresAt: expires, issuedAt: now, id: SecureRandom.token(byteCount: 16),
                extra: ["sign_up": .bool(true)])
            let token = try issuer.keys.current.sign(claims)
            ctx.logger.info(
                "sign-up opened",
                metadata: ["signet.passkey_only": .string("\(passkeyOnly)"), "signet.profile": .string(body.profile.map { "\($0.vaultValues.count)" } ?? "0")])
            return try .json(
                SignUpStarted(signUpToken: token, expiresAt: expires, username: username, userHandle: userHandle, passkeyOnly: passkeyOnly), status: 201,
                headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signups/finish", .open) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(Finish.self)
            let verifier = issuer.keys.verifier(options: JWTValidationOptions(
                issuer: issuer.issuer, audience: SessionTokenVerifier.registrationAudience(tenant: tenant), requiredClaims: ["sub", "jti", "sign_up"]))
            let invalid = HTTPError(.invalidSignUpToken, detail: "Open a new sign-up.")
            // Only a sign-up's token finishes here (the kinds of registration-only token are
            // told apart in one place, as the route guards do): a sign-in's (`signin` claim)
            // is exchanged by its sign-in once the rules no longer enforce registering; a QR
            // registration's (`qr` claim) only registers, and never becomes a session.
            guard let jwt = try? verifier.verify(body.signUpToken, now: Date()), RegistrationTokenKind(claims: jwt.claims) == .signUp,
                let username = jwt.claims.subject, let jti = jwt.claims.id, let expires = jwt.claims.expiresAt
            else { throw invalid }
            guard try await registeredCount(tenant: tenant, username: username) > 0 else {
                throw HTTPError(.nothingRegistered, detail: "Register a method first.")
            }
            // What is registered must be this sign-up's: a sign-up opened for a username before
            // its user's own would otherwise finish with the user's methods (the registration
            // service records which sign-up registered on an account first).
            let claim = try await calls.post(
                "\(registrationURL)/v1/internal/tenants/\(tenant)/sign-ups/claims", SignUpClaimQuery(username: username, jti: jti), as: SignUpClaimAnswer.self)
            guard claim.registered else {
                throw HTTPError(.nothingRegistered, detail: "This sign-up registered nothing; register a method first.")
            }
            let now = Date()
            let issued = try await context.withTransaction { conn -> SessionStore.Issued in
                // Each sign-up token finishes once (its id is kept until it would have expired).
                guard try await SignUpStore.useToken(jti: jti, expiresAt: expires, on: conn) else { throw invalid }
                return try await sessions.create(
                    tenant: tenant, username: username, userHandle: nil, amr: ["sign_up"], acr: "sign_up", credentialID: nil, at: now, on: conn)
            }
            ctx.logger.info("sign-up finished")
            return try .json(try issued.refreshableTokens(), headers: [("Cache-Control", "no-store")])
        }
    }

    func registeredCount(tenant: String, username: String) async throws -> Int {
        try await SignUpStore(pool: context.pool, subjectKey: context.configuration.subjectKey).registeredCount(tenant: tenant, username: username)
    }
}
