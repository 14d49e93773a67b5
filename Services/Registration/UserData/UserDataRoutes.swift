import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit
import Platform

/// A user's data over HTTP: fetch it (``UserDataExport``), erase it (``ErasureStore``), follow
/// an erasure, and the keys its receipts verify with.
///
/// - `GET /v1/tenants/{t}/users/{u}/data` (RP key or the user's session): the document, or with
///   `Accept: application/zip` a ZIP of one JSON file per service and a manifest.
/// - `DELETE /v1/tenants/{t}/users/{u}` (RP key or the user's session): 202 `{"erasureId"}`.
/// - `GET /v1/tenants/{t}/erasures/{erasureId}` (RP key): progress per service, the receipt.
/// - `GET /v1/internal/tenants/{t}/erasures/{erasureId}/username` (internal token): the
///   username of an erasure in progress, for the services whose own rows are keyed by username
///   (the purge request names the user by subject reference only); 404 once it completed.
/// - `GET /v1/internal/tenants/{t}/subjects/{subjectRef}/username` (internal token): the
///   username a subject reference of a registration event stands for (``SubjectDirectory``);
///   404 for an unknown or erased user.
/// - `GET /.well-known/jwks.json`: the receipt keys.
struct UserDataRoutes: Sendable {
    let context: ServiceContext
    let export: UserDataExport
    let erasures: ErasureStore
    let sessions: SessionTokenVerifier?

    func register(on router: inout GuardedRouter) {
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        router.get("/v1/tenants/{tenant}/users/{username}/data", selfOrRP) { request, ctx in try await fetch(request, ctx) }
        router.delete("/v1/tenants/{tenant}/users/{username}", selfOrRP) { request, ctx in try await erase(request, ctx) }
        router.get("/v1/tenants/{tenant}/erasures/{erasureId}", context.relyingParty) { _, ctx in
            guard let erasure = try await erasures.find(id: ctx.parameter("erasureId"), tenant: ctx.parameter("tenant")) else {
                throw HTTPError(.notFound, detail: "No such erasure in this tenant.")
            }
            return try .json(erasure, headers: [("Cache-Control", "no-store")])
        }
        let calls = context.configuration.internalCalls
        router.get("/v1/internal/tenants/{tenant}/erasures/{erasureId}/username", calls.guardInternal) { _, ctx in
            let username = try await context.pool.withConnection { conn in
                try await ErasureStore.username(erasure: ctx.parameter("erasureId"), tenant: ctx.parameter("tenant"), on: conn)
            }
            guard let username else { throw HTTPError(.notFound, detail: "No erasure in progress by this id in this tenant.") }
            return try .json(ErasureUsername(username: username), headers: [("Cache-Control", "no-store")])
        }
        router.get("/v1/internal/tenants/{tenant}/subjects/{subjectRef}/username", calls.guardInternal) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let subjectRef = ctx.parameter("subjectRef")
            let username = try await context.pool.withConnection { conn in
                try await SubjectDirectory.username(tenant: tenant, subjectRef: subjectRef, on: conn)
            }
            guard let username else { throw HTTPError(.notFound, detail: "No user by this reference in this tenant.") }
            return try .json(SubjectUsername(subjectRef: subjectRef, username: username), headers: [("Cache-Control", "no-store")])
        }
        router.get("/.well-known/jwks.json", .open) { _, _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(erasures.receipts.keys.jwksJSON.utf8))
        }
    }

    /// The tenant (which must exist) and user of the path; a registration-only token neither
    /// reads nor erases an account (its guard refuses it).
    private func target(_ ctx: RequestContext) async throws -> (tenant: String, username: String) {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
        return (tenant, username)
    }

    func fetch(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenant, username) = try await target(ctx)
        let document = try await export.gather(tenant: tenant, username: username, at: Date())
        ctx.logger.info("user data exported", metadata: ["signet.missing_parts": .string("\(document.missing.count)")])
        if Self.wantsZip(request.header("Accept")) {
            return HTTPResponse(
                status: 200,
                headers: [
                    ("Content-Type", "application/zip"), ("Content-Disposition", "attachment; filename=\"user-data.zip\""),
                    ("Cache-Control", "no-store"),
                ],
                body: try UserDataExport.zip(document))
        }
        return try .json(document, headers: [("Cache-Control", "no-store")])
    }

    func erase(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenant, username) = try await target(ctx)
        let id = try await erasures.start(tenant: tenant, username: username, at: Date())
        ctx.logger.notice("user data erasure started", metadata: ["signet.erasure": .string(id)])
        return try .json(ErasureStarted(erasureId: id), status: 202, headers: [("Location", "/v1/tenants/\(tenant)/erasures/\(id)")])
    }

    /// Whether an `Accept` header asks for `application/zip` (before any JSON type it lists).
    static func wantsZip(_ accept: String?) -> Bool {
        guard let accept else { return false }
        for range in accept.lowercased().split(separator: ",") {
            let type = range.split(separator: ";").first.map { $0.trimmingWhitespace() } ?? ""
            if type == "application/zip" { return true }
            if type == "application/json" { return false }
        }
        return false
    }
}
