import FoundationEssentials
import HTTPServer
import Rules
import Schema
import ServiceKit
import Tokens
import JSON

/// Admin API of adaptive authentication: rulesets (authentication and registration decisions),
/// their explanation against given facts, and the sign-in settings.
struct PolicyAdminRoutes: Sendable {
    let context: ServiceContext
    let policies: PolicyStore
    /// The methods rulesets of each kind may name.
    let catalogs: [Ruleset.Kind: Ruleset.MethodCatalog]

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/rulesets/{kind}", context.admin) { request, ctx in
            let (tenant, kind) = try await target(ctx)
            let body = try request.decode(JSONValue.self)
            let catalog = catalogs[kind] ?? Ruleset.MethodCatalog(known: [], signing: [], transactionFacts: [])
            let stored = try await policies.putRuleset(body, kind: kind, catalog: catalog, tenant: tenant, context: context)
            ctx.logger.info("ruleset stored", metadata: ["signet.ruleset.kind": .string(kind.rawValue), "signet.ruleset.version": "\(stored.version)"])
            return try .json(stored, headers: [("Cache-Control", "no-store")])
        }
        router.get("/v1/admin/tenants/{tenant}/rulesets/{kind}", context.admin) { request, ctx in
            let (tenant, kind) = try await target(ctx)
            return try .json(try await policies.getRuleset(kind: kind, tenant: tenant), headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/admin/tenants/{tenant}/rulesets/{kind}/explain", context.admin) { request, ctx in
            let (tenant, kind) = try await target(ctx)
            let body = try request.decode(RulesetExplainRequest.self)
            let policy = try await policies.policy(for: tenant)
            let compiled = kind == .authentication ? policy.authentication : policy.registration
            let trace = compiled.explain(.object(body.facts))
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: Array(trace.json.jsonString.utf8))
        }
        router.put("/v1/admin/tenants/{tenant}/authentication-settings", context.admin) { request, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            let settings = try request.decode(AuthenticationSettings.self)
            try await policies.putSettings(settings, tenant: tenant, context: context)
            return try .json(Self.redacted(settings), headers: [("Cache-Control", "no-store")])
        }
        router.get("/v1/admin/tenants/{tenant}/authentication-settings", context.admin) { request, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            return try .json(Self.redacted(try await policies.policy(for: tenant).settings), headers: [("Cache-Control", "no-store")])
        }
    }

    /// Settings as answered: the RP's bearer token for password checks is never returned. Sent
    /// back unchanged by PUT, the redaction keeps the stored token (see
    /// ``PolicyStore/restoringRedactedToken(_:stored:)``).
    static func redacted(_ settings: AuthenticationSettings) -> AuthenticationSettings {
        var s = settings
        if s.externalPassword?.bearerToken != nil { s.externalPassword?.bearerToken = AuthenticationSettings.redactedSecret }
        return s
    }

    private func target(_ ctx: RequestContext) async throws -> (String, Ruleset.Kind) {
        let tenant = ctx.parameter("tenant")
        guard let kind = Ruleset.Kind(rawValue: ctx.parameter("kind")) else {
            throw HTTPError(.notFound, detail: "Rulesets are authentication or registration.")
        }
        guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
        return (tenant, kind)
    }
}
