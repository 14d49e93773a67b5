import HTTPServer
import JSON
import Schema

/// A tenant's settings beyond its description, through the owning services' admin APIs:
/// its UAF facets and policy (registration) and its apps (oob). Viewers read; administrators
/// change. Bodies are read by the strict parser here and checked by the service, whose
/// problems come back as they are (same status, code and field).
///
/// | console route | role | service route |
/// |---|---|---|
/// | `GET`/`PUT /console/api/tenants/{t}/uaf-settings` | viewer / administrator | registration `/v1/admin/tenants/{t}/uaf-settings` (`facetIds`, `policy`, `allowSurrogateWithoutMetadata`; the `appId` read-only) |
/// | `GET`/`PUT`/`DELETE /console/api/tenants/{t}/app-settings` | viewer / administrator | oob `/v1/admin/tenants/{t}/app-settings` (`domains`, `iosAppIds`, `androidApps`, `defaultQrType`, `webUrl`) |
struct TenantSettingsConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    /// (console and service path suffix, owning service, whether it can be deleted)
    static let documents: [(name: String, service: ServiceName, deletable: Bool)] = [
        ("uaf-settings", .registration, false),
        ("app-settings", .oob, true),
    ]

    func register(on router: inout GuardedRouter) {
        for (name, service, deletable) in Self.documents {
            let template = "/console/api/tenants/{tenant}/\(name)"
            router.get(template, guards.at(.viewer)) { _, ctx in
                try await upstream.send(service, "GET", "/v1/admin/tenants/\(ctx.parameter("tenant"))/\(name)", credential: .admin, body: nil).asResponse
            }
            router.put(template, guards.at(.administrator)) { request, ctx in
                let answer = try await upstream.send(
                    service, "PUT", "/v1/admin/tenants/\(ctx.parameter("tenant"))/\(name)", credential: .admin, body: try RulesetConsoleRoutes.jsonBody(request))
                TenantConsoleRoutes.audit(ctx, "\(name) changed", answer)
                return answer.asResponse
            }
            if deletable {
                router.delete(template, guards.at(.administrator)) { _, ctx in
                    let answer = try await upstream.send(
                        service, "DELETE", "/v1/admin/tenants/\(ctx.parameter("tenant"))/\(name)", credential: .admin, body: nil)
                    TenantConsoleRoutes.audit(ctx, "\(name) removed", answer)
                    return answer.asResponse
                }
            }
        }
    }
}
