import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// A tenant's apps (admin API) and the app association files served for its domains:
///
/// - `PUT /v1/admin/tenants/{tenant}/app-settings` ``TenantAppSettings`` (checked by
///   ``AppSettingsRules``; 409 `app_domain_taken` for another tenant's domain), `GET`,
///   `DELETE`.
/// - `GET /.well-known/apple-app-site-association` and `GET /.well-known/assetlinks.json`,
///   public: the tenant is the one whose `domains` hold the request's `Host` (the gateway
///   passes the client's on). An unknown host, or a tenant without apps of that platform, is
///   404 `app_association_not_found`. Always `application/json`, never a redirect (Apple's and
///   Google's crawlers follow none).
struct AppAssociationRoutes: Sendable {
    let context: ServiceContext
    let store: AppSettingsStore

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/app-settings", context.admin) { request, ctx in try await put(request, ctx) }
        router.get("/v1/admin/tenants/{tenant}/app-settings", context.admin) { _, ctx in
            guard let settings = try await store.get(tenant: ctx.parameter("tenant")) else {
                throw HTTPError(.appSettingsNotFound, detail: "The tenant has no app settings.")
            }
            return try .json(settings, headers: [("Cache-Control", "no-store")])
        }
        router.delete("/v1/admin/tenants/{tenant}/app-settings", context.admin) { _, ctx in
            guard try await store.delete(tenant: ctx.parameter("tenant")) else {
                throw HTTPError(.appSettingsNotFound, detail: "The tenant has no app settings.")
            }
            ctx.logger.info("app settings removed")
            return HTTPResponse(status: 204)
        }
        router.get("/.well-known/apple-app-site-association", .open) { request, _ in
            let settings = try await settings(for: request)
            guard !settings.iosAppIds.isEmpty else { throw Self.notFound }
            return try Self.file(AppleAppSiteAssociation(appIDs: settings.iosAppIds))
        }
        router.get("/.well-known/assetlinks.json", .open) { request, _ in
            let settings = try await settings(for: request)
            guard !settings.androidApps.isEmpty else { throw Self.notFound }
            return try Self.file(settings.androidApps.map(AssetLinkStatement.init(app:)))
        }
    }

    func put(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let body = try request.decode(TenantAppSettings.self)
        guard let tenant = try await context.tenants.find(tenantId) else { throw HTTPError(.tenantNotFound, detail: "No such tenant.") }
        try AppSettingsRules.check(body, origins: tenant.origins)
        try await store.put(body, tenant: tenantId)
        ctx.logger.info("app settings stored", metadata: ["signet.count": "\(body.iosAppIds.count + body.androidApps.count)"])
        return try .json(body, headers: [("Cache-Control", "no-store")])
    }

    /// The settings of the tenant whose domain the `Host` header names.
    func settings(for request: HTTPRequest) async throws -> TenantAppSettings {
        guard let host = AppSettingsRules.host(fromHeader: request.header("host")), let settings = try await store.settings(forDomain: host) else {
            throw Self.notFound
        }
        return settings
    }

    static var notFound: HTTPError { HTTPError(.appAssociationNotFound, detail: "No app association for this host.") }

    /// A association file: JSON, cacheable for a few minutes (crawlers and CDNs re-read it).
    static func file<T: Encodable>(_ value: T) throws -> HTTPResponse {
        try .json(value, headers: [("Cache-Control", "public, max-age=300")])
    }
}
