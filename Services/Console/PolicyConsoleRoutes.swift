import HTTPServer
import JSON
import Schema

/// A tenant's policies and keys through the services' admin APIs, and unlocking a user's
/// method after anti-hammering locked it:
///
/// | console route | role | service route |
/// |---|---|---|
/// | `GET`/`PUT /console/api/tenants/{t}/fido-policy` | viewer / administrator | registration `…/v1/admin/tenants/{t}/fido-policy` (on the operators' tenant, only with `userVerification: required`) |
/// | `GET`/`PUT /console/api/tenants/{t}/authentication-settings` | viewer / administrator | authentication `…/authentication-settings` (its answer redacts the RP's password-check token) |
/// | `GET /console/api/metadata/models?q=&after=` | viewer | registration `GET /v1/admin/metadata/models` (the metadata's models to pick from: name, icon, certification level, status) |
/// | `POST /console/api/tenants/{t}/tctoken-keys/rotate` | administrator | transaction `…/tctoken-keys/rotate` |
/// | `POST /console/api/tenants/{t}/users/{u}/methods/{method}/unlock` | operator (administrator on the operators' tenant) | authentication `POST /v1/tenants/{t}/users/{u}/methods/{method}/unlock` (admin token) |
struct PolicyConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    func register(on router: inout GuardedRouter) {
        for (name, service) in [("fido-policy", ServiceName.registration), ("authentication-settings", .authentication)] {
            router.get("/console/api/tenants/{tenant}/\(name)", guards.at(.viewer)) { _, ctx in
                try await upstream.send(service, "GET", "/v1/admin/tenants/\(ctx.parameter("tenant"))/\(name)", credential: .admin, body: nil).asResponse
            }
            router.put("/console/api/tenants/{tenant}/\(name)", guards.at(.administrator)) { request, ctx in
                if name == "fido-policy" { try requireUserVerificationOnOperators(request, ctx) }
                let answer = try await upstream.send(
                    service, "PUT", "/v1/admin/tenants/\(ctx.parameter("tenant"))/\(name)", credential: .admin, body: try RulesetConsoleRoutes.jsonBody(request))
                TenantConsoleRoutes.audit(ctx, "\(name) changed", answer)
                return answer.asResponse
            }
        }
        router.get("/console/api/metadata/models", guards.at(.viewer)) { request, _ in
            var query: [String] = []
            for name in ["q", "after"] {
                guard let value = request.query[name] else { continue }
                guard value.utf8.count <= 256, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw HTTPError.invalid(name, "\(name) is at most 256 bytes without control characters.")
                }
                query.append("\(name)=\(PathSegment.encode(value))")
            }
            query.append("limit=20")
            return try await upstream.send(.registration, "GET", "/v1/admin/metadata/models?" + query.joined(separator: "&"), credential: .admin, body: nil)
                .asResponse
        }
        router.post("/console/api/tenants/{tenant}/tctoken-keys/rotate", guards.at(.administrator)) { _, ctx in
            let answer = try await upstream.send(
                .transaction, "POST", "/v1/admin/tenants/\(ctx.parameter("tenant"))/tctoken-keys/rotate", credential: .admin, body: nil)
            TenantConsoleRoutes.audit(ctx, "tcToken key rotated", answer)
            return answer.asResponse
        }
        router.post("/console/api/tenants/{tenant}/users/{username}/methods/{method}/unlock", guards.changingUsers(at: .operator)) { _, ctx in
            let method = ctx.parameter("method")
            guard method.utf8.count <= 32, method.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }) else {
                throw HTTPError.invalid("method", "Methods are lower-case names such as fido2 or email_otp.")
            }
            let path = "/v1/tenants/\(ctx.parameter("tenant"))/users/\(try UserConsoleRoutes.username(ctx))/methods/\(method)/unlock"
            let answer = try await upstream.send(.authentication, "POST", path, credential: .admin, body: nil)
            TenantConsoleRoutes.audit(ctx, "method unlocked", answer)
            return answer.asResponse
        }
    }

    /// The operators' tenant's policy keeps `userVerification: required` (what makes the
    /// authentication service refuse presence-only sign-ins of operators): a document without
    /// it (the member absent means the default, `preferred`) is refused before it reaches the
    /// registration service. Path tenants are lower-case ASCII (checked before the guard), so
    /// comparing bytes is comparing tenants.
    ///
    /// - Throws: 409 `console_operators_policy_protected`; the body's own problem when it is no
    ///   JSON.
    func requireUserVerificationOnOperators(_ request: HTTPRequest, _ ctx: RequestContext) throws {
        guard ctx.parameter("tenant").utf8.elementsEqual(guards.operatorsTenant.utf8) else { return }
        let policy = try request.decode(JSONValue.self)
        guard policy["userVerification"]?.stringValue == "required" else {
            ctx.logger.notice("console: refused to weaken the operators' tenant's FIDO policy")
            throw HTTPError(
                .consoleOperatorsPolicyProtected, detail: "The operators' tenant's FIDO policy keeps userVerification: required.", field: "userVerification")
        }
    }
}
