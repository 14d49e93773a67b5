import HTTPServer
import Schema
import ServiceKit

/// `GET /v1/admin/tenants/{tenant}/users?prefix=&after=&limit=` (admin token): a tenant's
/// users by username prefix, a page at a time (``UserSearchResult``), for operators' tools
/// such as the admin console. No RP route lists users: a relying party knows its own.
///
/// - `prefix` (default empty: every user) and `after` (the previous page's `next`): at most
///   256 bytes, no control characters; `limit` 1-100 (20). Otherwise 400 `invalid_field`
///   naming the parameter. An unknown tenant is 404 `tenant_not_found`.
struct UserSearchRoutes: Sendable {
    let context: ServiceContext
    let users: UserStore

    func register(on router: inout GuardedRouter) {
        router.get("/v1/admin/tenants/{tenant}/users", context.admin) { request, ctx in
            let prefix = try Self.text(request.query["prefix"] ?? "", name: "prefix")
            let after = try request.query["after"].map { try Self.text($0, name: "after") }
            var limit = 20
            if let text = request.query["limit"] {
                guard let value = Int(text), (1...UserSearchResult.maximumLimit).contains(value) else {
                    throw HTTPError.invalid("limit", "limit is 1-\(UserSearchResult.maximumLimit).")
                }
                limit = value
            }
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            return try .json(try await users.search(tenant: tenant, prefix: prefix, after: after, limit: limit), headers: [("Cache-Control", "no-store")])
        }
    }

    /// A query value that can be part of a username: bounded, without control characters.
    static func text(_ value: String, name: String) throws -> String {
        guard value.utf8.count <= UserSearchResult.maximumPrefixBytes, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw HTTPError.invalid(name, "\(name) is at most \(UserSearchResult.maximumPrefixBytes) bytes without control characters.") }
        return value
    }
}
