import FIDO
import FoundationEssentials
import HTTPServer
import ServiceKit

/// Per-tenant FIDO policy: `PUT`/`GET /v1/admin/tenants/{tenant}/fido-policy` (admin token).
/// The document is `FIDO.FIDOPolicy`'s; every member is optional and defaults to the consumer
/// default, unknown members are refused, and a refusal names the JSON pointer at fault.
struct FIDOPolicyRoutes: Sendable {
    let context: ServiceContext
    let policies: FIDOPolicyStore

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/fido-policy", context.admin) { request, ctx in
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
            try await policies.put(policy, tenant: ctx.parameter("tenant"), at: Date(), context: context)
            ctx.logger.info("fido policy updated")
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: policy.document())
        }
        router.get("/v1/admin/tenants/{tenant}/fido-policy", context.admin) { _, ctx in
            guard try await context.tenants.find(ctx.parameter("tenant")) != nil else { throw HTTPError(.tenantNotFound) }
            let policy = try await policies.policy(for: ctx.parameter("tenant"))
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: policy.document())
        }
    }
}
