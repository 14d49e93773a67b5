import FIDO
import Foundation
import HTTPServer
import Postgres
import ServiceKit

/// Per-tenant FIDO policy: `PUT`/`GET /v1/admin/tenants/{tenant}/fido-policy` (admin token).
/// The document is `FIDO.FIDOPolicy`'s; every member is optional and defaults to the consumer
/// default, unknown members are refused, and a refusal names the JSON pointer at fault.
struct FIDOPolicyRoutes: Sendable {
    let context: ServiceContext

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/fido-policy", context.admin) { request, ctx in
            let tenantID = ctx.parameter("tenant")
            let ct = request.header("content-type")?.lowercased() ?? ""
            guard ct.hasPrefix("application/json") else { throw HTTPError(.unsupportedMediaType, detail: "The body must be application/json.") }
            let policy: FIDOPolicy
            do {
                policy = try FIDOPolicy(document: request.body)
            } catch let error as FIDOPolicyError {
                throw HTTPError(
                    error.code == .malformed ? .malformedJSON : .invalidField, detail: error.reason,
                    field: error.path.isEmpty ? "$" : error.path)
            }
            let document = String(decoding: policy.document(), as: UTF8.self)
            try await context.withTransaction { conn in
                guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenantID) FOR SHARE").first != nil else {
                    throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
                }
                try await conn.query(
                    """
                    INSERT INTO fido_policies (tenant_id, document, updated_at) VALUES (\(tenantID), \(document), \(Date()))
                    ON CONFLICT (tenant_id) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
                    """)
            }
            ctx.logger.info("fido policy updated")
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: policy.document())
        }
        router.get("/v1/admin/tenants/{tenant}/fido-policy", context.admin) { request, ctx in
            guard try await context.tenants.find(ctx.parameter("tenant")) != nil else { throw HTTPError(.tenantNotFound) }
            let policy = try await FIDOPolicyRoutes.policy(for: ctx.parameter("tenant"), pool: context.pool)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: policy.document())
        }
    }

    /// The tenant's policy, or the consumer default.
    static func policy(for tenantID: String, pool: PostgresPool) async throws -> FIDOPolicy {
        let rows = try await pool.withConnection { try await $0.query("SELECT document FROM fido_policies WHERE tenant_id = \(tenantID)") }
        guard let text = rows.first?.string("document") else { return .consumerDefault }
        return (try? FIDOPolicy(document: Array(text.utf8))) ?? .consumerDefault
    }
}
