import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Rules
import Schema
import ServiceKit
import Tokens

/// ENFORCE_REGISTRATION: a sign-in that succeeds while the tenant's registration decision rules
/// enforce registering a method gives no session but a registration-only token. The
/// registration service admits it on the routes that register a method (as a sign-up token,
/// guard `relyingPartyOrRegistrant`) and refuses it everywhere else with 403
/// `registration_only`; once the user registered what the rules ask, the sign-in exchanges it
/// for the session it would have given (`POST …/signins/{id}/session`), once.
extension SignInCoordinator {
    /// How long a registration-only token lasts: as long as a sign-up's.
    static let registrationTokenLifetime: TimeInterval = 1800

    /// What a sign-in that succeeded gives.
    enum Granted: Sendable {
        case session(SessionStore.Issued)
        case registrationOnly(token: String, expiresAt: Date)

        var sessionToken: String? { if case .session(let s) = self { s.accessToken } else { nil } }
        var refreshToken: String? { if case .session(let s) = self { s.refreshToken } else { nil } }
        var registrationToken: String? { if case .registrationOnly(let t, _) = self { t } else { nil } }
        var expiresAt: Date {
            switch self {
            case .session(let s): s.expiresAt
            case .registrationOnly(_, let e): e
            }
        }
    }

    /// Grants what a succeeded sign-in gives, in the caller's transaction: a session, or under
    /// ENFORCE_REGISTRATION (`suggestion`) a registration-only token and no session. Either way
    /// the sign-in counts as the user's last.
    func grant(
        signin: String, tenant: String, username: String, userHandle: String?, amr: [String], acr: String, credentialID: String?,
        suggestion: RegistrationSuggestion?, refreshable: Bool = true, at now: Date, on conn: PostgresConnection
    ) async throws -> Granted {
        try await flows.recordSignIn(tenant: tenant, username: username, at: now, on: conn)
        if suggestion?.action == "ENFORCE_REGISTRATION" {
            let issued = try sessions.issuer.issueRegistrationOnly(
                tenant: tenant, username: username, signinID: signin, lifetime: Self.registrationTokenLifetime, at: now)
            return .registrationOnly(token: issued.token, expiresAt: issued.expiresAt)
        }
        return .session(
            try await sessions.create(
                tenant: tenant, username: username, userHandle: userHandle, amr: amr, acr: acr, credentialID: credentialID, refreshable: refreshable,
                at: now, on: conn))
    }

    /// Exchanges the registration-only token of the sign-in `id` for its session, once the
    /// registration decision rules no longer enforce registering (the user registered what
    /// they asked). The session has the sign-in's `amr` and `acr`; each token is exchanged once.
    ///
    /// - Throws: 401 `invalid_registration_token` (invalid, expired, another sign-in's or
    ///   user's, already exchanged); 404 `signin_not_found`; 409 `registration_required` while
    ///   the rules still enforce.
    func sessionAfterRegistration(signin id: String, tenant: String, token: String, logger: Logger) async throws -> SessionTokens {
        let issuer = sessions.issuer
        let verifier = issuer.keys.verifier(
            options: JWTValidationOptions(
                issuer: issuer.issuer, audience: SessionTokenVerifier.registrationAudience(tenant: tenant),
                requiredClaims: ["sub", "jti", "sign_up", "signin"]))
        let invalid = HTTPError(.invalidRegistrationToken, detail: "Sign in again.")
        guard token.utf8.count <= 4096, let jwt = try? verifier.verify(token, now: Date()), RegistrationTokenKind(claims: jwt.claims) == .enforcedRegistration,
            jwt.claims[claim: "signin"] == .string(id), let username = jwt.claims.subject, let jti = jwt.claims.id, let expires = jwt.claims.expiresAt
        else { throw invalid }
        let flow = try await flows.load(id, tenant: tenant)
        guard flow.status == .succeeded, let signedIn = flow.username, UsernameRules.identical(signedIn, username) else { throw invalid }
        let decision = try await registrationDecision(tenant: tenant, username: username)
        guard decision.action != "ENFORCE_REGISTRATION" else {
            throw HTTPError(
                .registrationRequired,
                detail: "Register \(decision.offeredSequences.map { $0.joined(separator: "+") }.joined(separator: " or ")) first (rule \(decision.matchedRule)).")
        }
        let acr = flow.progress.satisfied?.joined(separator: "+") ?? (flow.completed.isEmpty ? "allow" : flow.completed.joined(separator: "+"))
        let now = Date()
        let issued = try await context.withTransaction { conn -> SessionStore.Issued in
            guard try await SignUpStore.useToken(jti: jti, expiresAt: expires, on: conn) else { throw invalid }
            return try await sessions.create(
                tenant: tenant, username: username, userHandle: nil, amr: flow.completed, acr: acr, credentialID: flow.usedCredentials.last, at: now,
                on: conn)
        }
        logger.info("session granted after an enforced registration")
        return try issued.refreshableTokens()
    }
}
