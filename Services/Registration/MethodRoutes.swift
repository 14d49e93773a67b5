import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// A user's non-FIDO methods over HTTP: set up and confirm (``MethodEnrollment``), list with
/// the FIDO credentials, rename, remove (``MethodStore``). Every activation and removal is a
/// `MethodChanged` event.
struct MethodRoutes: Sendable {
    let context: ServiceContext
    let enrollment: MethodEnrollment
    let methods: MethodStore
    let sessions: SessionTokenVerifier?

    func register(on router: inout GuardedRouter) {
        // A registration-only token (sign-up, ENFORCE_REGISTRATION) sets up, confirms and
        // lists methods; renaming and removing need a session.
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        // A QR registration's token does not (it registers a passkey only).
        let registrant = context.relyingPartyOrRegistrant(sessions: sessions, accepting: [.signUp, .enforcedRegistration])
        // A sign-up's token acts only on an account it registered on first (SignUpClaim).
        router.post("/v1/tenants/{tenant}/users/{username}/methods", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await create(request, ctx) }
        }
        router.get("/v1/tenants/{tenant}/users/{username}/methods", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) {
                let (tenant, username) = try authorize(ctx)
                return try .json(MethodList(methods: try await methods.list(tenant: tenant, username: username)), headers: [("Cache-Control", "no-store")])
            }
        }
        router.post("/v1/tenants/{tenant}/users/{username}/methods/{methodId}/confirm", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await confirm(request, ctx) }
        }
        router.patch("/v1/tenants/{tenant}/users/{username}/methods/{methodId}", selfOrRP) { request, ctx in try await rename(request, ctx) }
        router.delete("/v1/tenants/{tenant}/users/{username}/methods/{methodId}", selfOrRP) { _, ctx in
            let (tenant, username) = try authorize(ctx)
            try await methods.remove(id: ctx.parameter("methodId"), tenant: tenant, username: username, at: Date())
            return HTTPResponse(status: 204)
        }
    }

    /// The tenant and user of the path (the guard admitted the RP or the user themself).
    func authorize(_ ctx: RequestContext) throws -> (tenant: String, username: String) {
        return (ctx.parameter("tenant"), try ctx.username())
    }

    /// `POST …/methods`: 201 with the pending method.
    func create(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenant, username) = try authorize(ctx)
        let body = try request.decode(MethodCreateRequest.self)
        let resource = try await enrollment.start(body, tenant: tenant, username: username)
        ctx.logger.info("method setup started", metadata: ["signet.method": .string(body.type)])
        return try .json(resource, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/methods/{methodId}/confirm`: the active method.
    func confirm(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenant, username) = try authorize(ctx)
        let body = try request.decode(CodeRequest.self)
        let resource = try await enrollment.confirm(methodID: ctx.parameter("methodId"), code: body.code, tenant: tenant, username: username)
        ctx.logger.info("method confirmed", metadata: ["signet.method": .string(resource.type)])
        return try .json(resource)
    }

    /// `PATCH …/methods/{methodId}` `{"friendlyName"}`: 204.
    func rename(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenant, username) = try authorize(ctx)
        struct Rename: Codable { var friendlyName: String }
        let body = try request.decode(Rename.self)
        guard !body.friendlyName.isEmpty, body.friendlyName.count <= 100 else { throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.") }
        try await methods.rename(id: ctx.parameter("methodId"), tenant: tenant, username: username, to: body.friendlyName)
        return HTTPResponse(status: 204)
    }
}
