import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// WebAuthn sign-in: request options (a sealed handle, nothing written) and assertion
/// verification (WebAuthn L3 §7.2 in `FIDO.AssertionVerifier`), where the challenge's single
/// use and the counter update commit in one transaction, then a session token.
///
/// One assertion gives a session here, without the tenant's authentication rules: both calls
/// answer 403 `direct_sign_in_disabled` for a tenant that closed the route
/// (``AuthenticationSettings/directSignIn``; by default, once it has a ruleset of its own). The
/// user's fido2 standing holds as in a sign-in flow (423 `method_locked`, 429
/// `method_probation`), and a refused assertion counts towards it.
struct WebAuthnAuthenticationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    let sessions: SessionIssuer
    let ceremony: AssertionCeremony
    /// The tenant's settings and rules, compiled and kept: whether the route is open.
    let policies: PolicyStore
    let antiHammering: AntiHammering

    static let ceremonyLifetime: TimeInterval = 300

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/webauthn/authentications/options", .open) { request, ctx in try await options(request, ctx) }
        router.post("/v1/tenants/{tenant}/webauthn/authentications", .open) { request, ctx in try await finish(request, ctx) }
        router.get("/.well-known/jwks.json", .open) { _, _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(sessions.keys.jwksJSON.utf8))
        }
    }

    func options(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = request.body.isEmpty ? AuthenticationOptionsRequest() : try request.decode(AuthenticationOptionsRequest.self)
        if let u = body.username { try UsernameRules.require(u) }
        if let requested = body.userVerification, !["required", "preferred", "discouraged"].contains(requested) {
            throw HTTPError.invalid("userVerification", "userVerification must be required, preferred or discouraged.")
        }
        // The tenant's FIDO policy decides unless the client asks for more (required).
        let fidoPolicy = try await ceremony.fidoPolicies.policy(for: tenantID)
        let uv = fidoPolicy.userVerification(requested: body.userVerification)
        let hints = body.hints ?? []
        guard hints.count <= 3, hints.allSatisfy({ ["security-key", "client-device", "hybrid"].contains($0) }) else {
            throw HTTPError.invalid("hints", "hints may contain security-key, client-device and hybrid.")
        }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // Before any ceremony starts: a closed route gives no options to finish.
        try await policies.requireDirectSignIn(tenant: tenantID)
        var allow: [CredentialDescriptorJSON] = []
        if let username = body.username {
            // An unknown username gets options with no credentials, like a known one without
            // credentials: the response does not reveal whether the account exists.
            allow = try await CredentialReadModel.activeDescriptors(
                tenant: tenantID, subjectRef: context.configuration.subjectKey.ref(tenant: tenantID, username: username), pool: context.pool)
        }
        let challenge = SecureRandom.bytes(32)
        let state = SignInHandle(
            tenant: tenantID, username: body.username, challenge: challenge,
            expiresAt: Date().addingTimeInterval(Self.ceremonyLifetime), userVerification: uv)
        let options = RequestOptionsJSON(
            challenge: Base64URL.encode(challenge), timeout: Int(Self.ceremonyLifetime * 1000), rpId: tenant.rpId, allowCredentials: allow,
            userVerification: uv, hints: hints, extensions: fidoPolicy.extensions)
        return try .json(
            AuthenticationOptionsResponse(handle: try state.sealed(with: handles), publicKey: options),
            headers: [("Cache-Control", "no-store")])
    }

    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // Again at finish: options given before the tenant closed the route give no session.
        let settings = try await policies.requireDirectSignIn(tenant: tenantID).settings
        let body = try request.decode(AuthenticationFinishRequest.self)
        let state = try SignInHandle.open(body.handle, with: handles)
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "The handle belongs to another tenant.") }
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The sign-in ceremony expired; start again.") }
        // No sessions row: the id proves itself when the RP revokes it (DirectSessionID).
        let sessionID = DirectSessionID.make(tenant: tenantID, handles: handles)
        func verify(standing: String? = nil) async throws -> AssertionCeremony.Verified {
            try await ceremony.verify(
                body.credential, tenant: tenant, challenge: state.challenge, challengeExpiresAt: state.expiresAt, expectedUsername: state.username,
                userVerification: state.userVerification, sessionID: sessionID, standing: standing, logger: ctx.logger)
        }
        // The user's fido2 standing: the username the options named, or the credential's owner.
        // A credential that cannot sign in at all is refused first, uncounted.
        let verified: AssertionCeremony.Verified
        let owner: String?
        if let named = state.username {
            try await ceremony.requireUsable(body.credential, tenant: tenantID)
            owner = named
        } else {
            owner = try await ceremony.owner(of: body.credential, tenant: tenantID)
        }
        if let username = owner {
            verified = try await antiHammering.checked(tenant: tenantID, username: username, method: "fido2", settings: settings, logger: ctx.logger) {
                try await verify(standing: "fido2")
            }
        } else {
            verified = try await verify()
        }
        let now = verified.at
        let credentialID = verified.credentialID
        let credential = verified
        let session = try sessions.issue(
            tenant: tenantID, username: credential.username, credentialID: credentialID, userVerified: verified.userVerified,
            sessionID: sessionID, at: now)
        ctx.logger.info("signed in")
        return try .json(
            AuthenticationResult(sessionToken: session.token, username: credential.username, credentialId: credentialID, expiresAt: session.expiresAt),
            headers: [("Cache-Control", "no-store")])
    }
}
