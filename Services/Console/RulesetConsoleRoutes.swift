import HTTPServer
import JSON
import Schema

/// Adaptive rulesets through the authentication service's admin API, and the explain dry run
/// (which rule matches given facts, and why the earlier ones did not). Viewers read and
/// explain (the dry run changes nothing); administrators store.
///
/// - `GET /console/api/tenants/{tenant}/rulesets/{kind}` → `GET /v1/admin/tenants/{tenant}/rulesets/{kind}`
/// - `PUT /console/api/tenants/{tenant}/rulesets/{kind}` → `PUT …` (the service validates and
///   answers `invalid_ruleset` with the path of the error)
/// - `POST /console/api/tenants/{tenant}/rulesets/{kind}/explain` `{"facts"}` → the trace
struct RulesetConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    static let kinds: Set<String> = ["authentication", "registration"]

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/tenants/{tenant}/rulesets/{kind}", guards.at(.viewer)) { _, ctx in
            try await upstream.send(.authentication, "GET", try Self.path(ctx), credential: .admin, body: nil).asResponse
        }
        router.put("/console/api/tenants/{tenant}/rulesets/{kind}", guards.at(.administrator)) { request, ctx in
            let answer = try await upstream.send(.authentication, "PUT", try Self.path(ctx), credential: .admin, body: try Self.jsonBody(request))
            TenantConsoleRoutes.audit(ctx, "ruleset stored", answer)
            return answer.asResponse
        }
        router.post("/console/api/tenants/{tenant}/rulesets/{kind}/explain", guards.at(.viewer)) { request, ctx in
            try await upstream.send(.authentication, "POST", try Self.path(ctx) + "/explain", credential: .admin, body: try Self.jsonBody(request)).asResponse
        }
    }

    /// The service's path for the route's tenant and kind.
    ///
    /// - Throws: 404 `not_found` for a kind that is not one (it never becomes part of a URL).
    static func path(_ ctx: RequestContext) throws -> String {
        let kind = ctx.parameter("kind")
        guard kinds.contains(kind) else { throw HTTPError(.notFound, detail: "Rulesets are authentication or registration.") }
        return "/v1/admin/tenants/\(ctx.parameter("tenant"))/rulesets/\(kind)"
    }

    /// The request's body, once the strict parser has read it as JSON: the service decodes it
    /// again, and what it refuses comes back with its own code and field.
    static func jsonBody(_ request: HTTPRequest) throws -> [UInt8] {
        _ = try request.decode(JSONValue.self)
        return request.body
    }
}
