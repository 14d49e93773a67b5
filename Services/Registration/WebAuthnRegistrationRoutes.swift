import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// WebAuthn registration over HTTP: creation options and the browser's response (the
/// ceremony is ``WebAuthnRegistrationCeremony``), the tenant's related origins, and the user's
/// credentials (list, rename, suspend, resume, deregister; ``CredentialStore``). Authorised by
/// the tenant's RP API key or the user's own session token.
struct WebAuthnRegistrationRoutes: Sendable {
    let context: ServiceContext
    let ceremony: WebAuthnRegistrationCeremony
    let credentials: CredentialStore
    /// Checks users' session tokens; nil accepts RP API keys only.
    let sessions: SessionTokenVerifier?

    /// A user's session token acts on that user's own account only.
    static func requireOwnAccount(_ principal: Principal, username: String) throws {
        // By bytes (UsernameRules.identical), as the database compares usernames.
        if principal.isOtherUser(than: username) {
            throw HTTPError(.forbidden, detail: "A session token acts on its own user's credentials only.")
        }
    }

    func register(on router: inout GuardedRouter) {
        // A registration-only token (sign-up, ENFORCE_REGISTRATION) registers, lists and asks
        // what to register; managing credentials needs a session. A QR registration's token
        // (the phone of a `register` or `bless` QR session) registers a passkey and nothing
        // else: the oob service checks the credential it names with this service's list.
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        let registrant = context.relyingPartyOrRegistrant(sessions: sessions, accepting: [.signUp, .enforcedRegistration])
        let passkeyRegistrant = context.relyingPartyOrRegistrant(sessions: sessions, accepting: [.signUp, .enforcedRegistration, .qrRegistration])
        router.get("/v1/tenants/{tenant}/webauthn/related-origins", .open) { _, ctx in try await relatedOrigins(ctx) }
        // A sign-up's token acts only on an account it registered on first (SignUpClaim).
        router.post("/v1/tenants/{tenant}/webauthn/registrations/options", passkeyRegistrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await options(request, ctx) }
        }
        router.post("/v1/tenants/{tenant}/webauthn/registrations", passkeyRegistrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await finish(request, ctx) }
        }
        router.get("/v1/tenants/{tenant}/users/{username}/credentials", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await list(ctx) }
        }
        router.get("/v1/tenants/{tenant}/users/{username}/registration-suggestion", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await suggestion(ctx) }
        }
        router.patch("/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", selfOrRP) { request, ctx in try await update(request, ctx) }
        router.delete("/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", selfOrRP) { _, ctx in try await deregister(ctx) }
    }

    func list(_ ctx: RequestContext) async throws -> HTTPResponse {
            var listed = try await credentials.list(tenant: ctx.parameter("tenant"), username: try ctx.username())
            for i in listed.indices {
                listed[i].model = AAGUID(listed[i].aaguid).flatMap { WebAuthnRegistrationCeremony.model($0, metadata: ceremony.metadata) }
            }
            let displayName = try await credentials.pickedDisplayName(tenant: ctx.parameter("tenant"), username: try ctx.username())
            return try .json(CredentialList(credentials: listed, displayName: displayName))
    }

    func suggestion(_ ctx: RequestContext) async throws -> HTTPResponse {
            // The seed's suggestRegister: a signed-in user (or the RP) asks which methods the
            // tenant's registration decision rules offer now, independently of a sign-in.
            guard let rules = ceremony.rules else {
                return try .json(
                    RegistrationDecision(action: "IGNORE_REGISTRATION", methods: [], matchedRule: "default"), headers: [("Cache-Control", "no-store")])
            }
            let decision = try await rules.decision(tenant: ctx.parameter("tenant"), username: try ctx.username())
            return try .json(decision, headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Related origins

    /// `GET …/webauthn/related-origins`: the WebAuthn L3 §5.11 related origins document for
    /// the tenant's RP ID, `{"origins": [...]}`, for the relying party to serve at
    /// `https://<rpId>/.well-known/webauthn` so that browsers let its other origins (other
    /// domains of the same service) use the RP ID. Public, like the document itself.
    func relatedOrigins(_ ctx: RequestContext) async throws -> HTTPResponse {
        guard let tenant = try await context.tenants.find(ctx.parameter("tenant")) else { throw HTTPError(.tenantNotFound) }
        return try .json(RelatedOriginsDocument(origins: tenant.origins), headers: [("Cache-Control", "public, max-age=300")])
    }

    // MARK: - Ceremony

    /// `POST …/webauthn/registrations/options`.
    func options(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(RegistrationOptionsRequest.self)
        try UsernameRules.require(body.username)
        try Self.requireOwnAccount(ctx.principal, username: body.username)
        let options = try await ceremony.options(body, tenant: ctx.parameter("tenant"))
        return try .json(options, headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/webauthn/registrations`: 201 with the credential.
    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(RegistrationFinishRequest.self)
        let state = try ceremony.open(body, tenant: tenant)
        try Self.requireOwnAccount(ctx.principal, username: state.username)
        return try .json(try await ceremony.finish(body, state: state, tenant: tenant, logger: ctx.logger), status: 201)
    }

    // MARK: - Manage

    /// `PATCH …/credentials/{credentialId}`: rename, suspend or resume. Every change is an
    /// event; a suspension stops sign-in as soon as the authentication service applies it.
    func update(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        let credentialID = try Self.credentialID(ctx)
        let body = try request.decode(CredentialUpdateRequest.self)
        var byUser = false
        if body.status != nil, case .user = ctx.principal {
            // A user may suspend their own authenticator (a lost phone) and resume what they
            // suspended; resuming what the relying party or the service suspended (a suspicion
            // of cloning, a revoked model) stays the relying party's decision.
            byUser = true
        }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters without control characters.")
        }
        if let status = body.status, !["active", "suspended"].contains(status) {
            throw HTTPError.invalid("status", "status must be active or suspended.")
        }
        guard body.friendlyName != nil || body.status != nil else { throw HTTPError.invalid("$", "Give friendlyName or status.") }
        try await credentials.update(
            tenant: tenant, username: username, credentialID: credentialID, friendlyName: body.friendlyName, status: body.status, byUser: byUser,
            at: Date())
        guard let resource = try await credentials.credential(tenant: tenant, username: username, id: Base64URL.encode(credentialID)) else {
            throw HTTPError(.notFound)
        }
        return try .json(resource)
    }

    /// `DELETE …/credentials/{credentialId}`: deregisters; 204, or 404 when unknown.
    func deregister(_ ctx: RequestContext) async throws -> HTTPResponse {
        let username = try ctx.username()
        try await credentials.deregister(tenant: ctx.parameter("tenant"), username: username, credentialID: try Self.credentialID(ctx), at: Date())
        ctx.logger.info("credential deregistered")
        return HTTPResponse(status: 204)
    }

    /// The path's `{credentialId}`, base64url.
    static func credentialID(_ ctx: RequestContext) throws -> [UInt8] {
        guard let id = Base64URL.decode(ctx.parameter("credentialId")), !id.isEmpty else {
            throw HTTPError.invalid("credentialId", "credentialId must be base64url.")
        }
        return id
    }
}
