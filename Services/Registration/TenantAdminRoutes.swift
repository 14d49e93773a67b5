import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// The admin API for tenants (``TenantStore``) and RP API keys (``APIKeyStore``), and the RP's
/// check of its own key.
struct TenantAdminRoutes: Sendable {
    let context: ServiceContext
    let tenants: TenantStore
    let keys: APIKeyStore

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}", context.admin) { request, ctx in try await upsertTenant(request, ctx) }
        router.post("/v1/admin/tenants/{tenant}/api-keys", context.admin) { _, ctx in
            let issued = try await keys.issue(tenant: ctx.parameter("tenant"), at: Date())
            ctx.logger.info("api key issued", metadata: ["signet.key.id": .string(issued.keyId)])
            return try .json(issued, status: 201, headers: [("Cache-Control", "no-store")])
        }
        router.put("/v1/admin/tenants/{tenant}/api-keys/{keyId}", context.admin) { request, ctx in try await importAPIKey(request, ctx) }
        router.delete("/v1/admin/tenants/{tenant}/api-keys/{keyId}", context.admin) { _, ctx in
            let keyID = try Self.keyID(ctx)
            try await keys.revoke(keyID: keyID, tenant: ctx.parameter("tenant"), at: Date())
            ctx.logger.info("api key revoked", metadata: ["signet.key.id": .string(keyID)])
            return HTTPResponse(status: 204)
        }
        router.get("/v1/tenants/{tenant}/api-keys/current", context.relyingParty) { _, ctx in
            guard case .relyingParty(let tenant, let keyID) = ctx.principal else { throw HTTPError(.unauthorized) }
            return try .json(APIKeyIdentity(tenantId: tenant, keyId: keyID))
        }
    }

    /// `PUT /v1/admin/tenants/{tenant}`: 201 when created, 200 when updated or unchanged.
    func upsertTenant(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(TenantUpsertRequest.self)
        if let v = body.violation() { throw HTTPError.invalid(v.field, v.message) }
        let (tenant, created) = try await tenants.upsert(ctx.parameter("tenant"), body)
        ctx.logger.info(created ? "tenant created" : "tenant updated", metadata: ["signet.revision": "\(tenant.revision)"])
        return try .json(tenant, status: created ? 201 : 200)
    }

    /// `PUT /v1/admin/tenants/{tenant}/api-keys/{keyId}` `{"apiKey"}`: registers an
    /// operator-chosen key: 201 when new, 200 when that id already holds the same key, 409 when
    /// the id or the key is already used otherwise.
    func importAPIKey(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let keyID = try Self.keyID(ctx)
        let body = try request.decode(APIKeyImportRequest.self)
        guard (APIKeyRules.minimumLength...APIKeyRules.maximumLength).contains(body.apiKey.utf8.count),
            body.apiKey.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw HTTPError.invalid("apiKey", "apiKey must be \(APIKeyRules.minimumLength)-\(APIKeyRules.maximumLength) printable ASCII characters.")
        }
        let created = try await keys.importKey(body.apiKey, keyID: keyID, tenant: tenant, at: Date())
        if created { ctx.logger.info("api key imported", metadata: ["signet.key.id": .string(keyID)]) }
        return try .json(APIKeyIdentity(tenantId: tenant, keyId: keyID), status: created ? 201 : 200)
    }

    /// The path's `{keyId}`: `k_` and 16 hex digits.
    static func keyID(_ ctx: RequestContext) throws -> String {
        let keyID = ctx.parameter("keyId")
        guard TenantValidation.isValidKeyID(keyID) else { throw HTTPError.invalid("keyId", "Key ids are k_ and 16 hex digits.") }
        return keyID
    }
}
