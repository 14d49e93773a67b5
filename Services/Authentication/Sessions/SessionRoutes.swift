import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// Client and RP calls about sessions and users' sign-in state:
///
/// - `POST /v1/tenants/{tenant}/sessions/refresh` (client, refresh token): rotation.
/// - `POST /v1/tenants/{tenant}/sessions/revoke` (client, refresh token): logout.
/// - `DELETE /v1/tenants/{tenant}/sessions/{sid}` (RP API key): revocation.
/// - `POST /v1/tenants/{tenant}/users/{username}/methods/{method}/unlock` (RP API key or
///   admin token): lifts anti-hammering.
/// - `DELETE /v1/tenants/{tenant}/users/{username}/registration-answer` (RP API key): forgets
///   the user's NOT_NOW/NEVER.
struct SessionRoutes: Sendable {
    let context: ServiceContext
    let sessions: SessionStore
    let antiHammering: AntiHammering

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/sessions/refresh", .open) { request, ctx in
            let body = try request.decode(RefreshTokenRequest.self)
            let tokens = try await sessions.refresh(body.refreshToken, tenant: ctx.parameter("tenant"))
            return try .json(tokens, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/sessions/revoke", .open) { request, ctx in
            let body = try request.decode(RefreshTokenRequest.self)
            // Logout answers 204 whether or not the token was known: nothing to learn from it.
            if try await sessions.revoke(tenant: ctx.parameter("tenant"), refreshToken: body.refreshToken, reason: "logout") {
                context.relay.notify()
            }
            return HTTPResponse(status: 204)
        }
        router.delete("/v1/tenants/{tenant}/sessions/{sid}", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let sid = ctx.parameter("sid")
            guard (1...64).contains(sid.utf8.count), try await sessions.revoke(tenant: tenant, sid: sid, reason: "relying_party") else {
                throw HTTPError(.notFound, detail: "No active session with this id.")
            }
            context.relay.notify()
            return HTTPResponse(status: 204)
        }
        router.post("/v1/tenants/{tenant}/users/{username}/methods/{method}/unlock", context.relyingPartyOrAdmin) { _, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await antiHammering.unlock(tenant: tenant, username: try ctx.username(), method: ctx.parameter("method")) else {
                throw HTTPError(.notFound, detail: "This method is neither locked nor on probation for this user.")
            }
            ctx.logger.info("method unlocked", metadata: ["signet.method": .string(ctx.parameter("method"))])
            return HTTPResponse(status: 204)
        }
        router.delete("/v1/tenants/{tenant}/users/{username}/registration-answer", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            try await SignInFlowStore(pool: context.pool).forgetRegistrationAnswer(tenant: tenant, username: try ctx.username())
            return HTTPResponse(status: 204)
        }
    }
}
