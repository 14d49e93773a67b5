import HTTPServer
import JSON
import Schema

/// Finding a tenant's users and acting on one, through the services' admin and RP APIs (the
/// RP API with the console's own key of the tenant, ``ConsoleTenantKeys``):
///
/// | console route | role | service route |
/// |---|---|---|
/// | `GET /console/api/tenants/{t}/users?prefix=&after=` | viewer | registration `GET /v1/admin/tenants/{t}/users` (admin token) |
/// | `GET …/users/{u}/methods` | viewer | registration `GET /v1/tenants/{t}/users/{u}/methods` (addresses masked by the service) |
/// | `GET …/users/{u}/devices` | viewer | oob `GET /v1/tenants/{t}/users/{u}/devices` |
/// | `GET …/users/{u}/data` | operator | registration `GET /v1/tenants/{t}/users/{u}/data`: the data-rights document (every service's part, the vault's values decrypted; the vault records the read), with the user's sessions and recent sign-ins |
/// | `DELETE …/users/{u}` | operator (administrator on the operators' tenant) | registration `DELETE /v1/tenants/{t}/users/{u}`: the erasure saga, 202 `{"erasureId"}` |
/// | `GET /console/api/tenants/{t}/erasures/{id}` | operator | registration `GET /v1/tenants/{t}/erasures/{id}`: status, tallies and, once completed, the signed receipt |
/// | `DELETE /console/api/tenants/{t}/sessions/{sid}` | operator (administrator on the operators' tenant) | authentication `DELETE /v1/tenants/{t}/sessions/{sid}` |
///
/// Viewers see what the services mask (methods' addresses) and no document with personal
/// data: the data-rights fetch needs the operator role. On the operators' tenant, whose users
/// are the console's operators, the routes that change a user need the administrator role
/// (``ConsoleGuards/changingUsers(at:)``).
struct UserDirectoryConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards
    let keys: ConsoleTenantKeys

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/tenants/{tenant}/users", guards.at(.viewer)) { request, ctx in
            var query: [String] = []
            for name in ["prefix", "after"] {
                guard let value = request.query[name] else { continue }
                guard value.utf8.count <= UserSearchResult.maximumPrefixBytes,
                    !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { throw HTTPError.invalid(name, "\(name) is at most \(UserSearchResult.maximumPrefixBytes) bytes without control characters.") }
                query.append("\(name)=\(PathSegment.encode(value))")
            }
            query.append("limit=25")
            let path = "/v1/admin/tenants/\(ctx.parameter("tenant"))/users?" + query.joined(separator: "&")
            return try await upstream.send(.registration, "GET", path, credential: .admin, body: nil).asResponse
        }
        for (name, service) in [("methods", ServiceName.registration), ("devices", .oob)] {
            router.get("/console/api/tenants/{tenant}/users/{username}/\(name)", guards.at(.viewer)) { _, ctx in
                let tenant = ctx.parameter("tenant")
                let path = "/v1/tenants/\(tenant)/users/\(try UserConsoleRoutes.username(ctx))/\(name)"
                try await keys.ensure(tenant)
                return try await upstream.send(service, "GET", path, credential: .tenantRelyingParty(tenant), body: nil).asResponse
            }
        }
        router.get("/console/api/tenants/{tenant}/users/{username}/data", guards.at(.operator)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let path = "/v1/tenants/\(tenant)/users/\(try UserConsoleRoutes.username(ctx))/data"
            try await keys.ensure(tenant)
            let answer = try await upstream.send(.registration, "GET", path, credential: .tenantRelyingParty(tenant), body: nil)
            TenantConsoleRoutes.audit(ctx, "user data fetched", answer)
            return answer.asResponse
        }
        router.delete("/console/api/tenants/{tenant}/users/{username}", guards.changingUsers(at: .operator)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let path = "/v1/tenants/\(tenant)/users/\(try UserConsoleRoutes.username(ctx))"
            try await keys.ensure(tenant)
            let answer = try await upstream.send(.registration, "DELETE", path, credential: .tenantRelyingParty(tenant), body: nil)
            TenantConsoleRoutes.audit(ctx, "user erasure requested", answer)
            return answer.asResponse
        }
        router.get("/console/api/tenants/{tenant}/erasures/{erasureId}", guards.at(.operator)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let id = ctx.parameter("erasureId")
            guard id.utf8.count == 35, id.hasPrefix("er_"), id.utf8.dropFirst(3).allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                throw HTTPError.invalid("erasureId", "Erasure ids are er_ and 32 hex digits.")
            }
            try await keys.ensure(tenant)
            return try await upstream.send(.registration, "GET", "/v1/tenants/\(tenant)/erasures/\(id)", credential: .tenantRelyingParty(tenant), body: nil)
                .asResponse
        }
        router.delete("/console/api/tenants/{tenant}/sessions/{sid}", guards.changingUsers(at: .operator)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let sid = ctx.parameter("sid")
            guard (1...64).contains(sid.utf8.count), sid.utf8.allSatisfy({ UserConsoleRoutes.isBase64URL($0) }) else {
                throw HTTPError.invalid("sid", "Session ids are 1-64 base64url characters.")
            }
            try await keys.ensure(tenant)
            let answer = try await upstream.send(.authentication, "DELETE", "/v1/tenants/\(tenant)/sessions/\(sid)", credential: .tenantRelyingParty(tenant), body: nil)
            TenantConsoleRoutes.audit(ctx, "session revoked", answer)
            return answer.asResponse
        }
    }
}
