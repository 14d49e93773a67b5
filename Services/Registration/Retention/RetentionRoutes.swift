import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// `PUT`/`GET /v1/admin/tenants/{tenant}/retention` (admin token): the tenant's
/// ``RetentionSettings``.
struct RetentionRoutes: Sendable {
    let context: ServiceContext
    let store: RetentionStore

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/retention", context.admin) { request, ctx in
            let settings = try request.decode(RetentionSettings.self)
            if let field = settings.invalidField { throw HTTPError.invalid(field, "\(field) must be 1-3650 days (or left out: kept).") }
            try await store.put(settings, tenant: ctx.parameter("tenant"), at: Date())
            ctx.logger.info("retention settings updated")
            return try .json(settings)
        }
        router.get("/v1/admin/tenants/{tenant}/retention", context.admin) { _, ctx in
            guard try await context.tenants.find(ctx.parameter("tenant")) != nil else { throw HTTPError(.tenantNotFound) }
            return try .json(try await store.settings(tenant: ctx.parameter("tenant")))
        }
    }
}
