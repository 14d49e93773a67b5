/// Who may call a route, declared where the route is registered: the guard authenticates the
/// request and sets ``RequestContext/principal`` before the handler runs, so a handler reads the
/// principal and never authenticates. A route cannot be registered without one.
public struct RouteGuard: Sendable {
    /// What the guard admits, as the authorization matrix names it (`public`, `admin`,
    /// `relyingParty`, `relyingPartyOrSelf`, `internal`, …).
    public let name: String
    let authorize: @Sendable (HTTPRequest, RequestContext) async throws -> Principal

    /// - Parameter authorize: returns the caller, or throws the refusal (401/403 problem).
    public init(name: String, authorize: @escaping @Sendable (HTTPRequest, RequestContext) async throws -> Principal) {
        self.name = name
        self.authorize = authorize
    }

    /// Anyone: sign-in ceremonies, public keys, tenant metadata.
    public static let open = RouteGuard(name: "public") { _, _ in .anonymous }
}

/// A route as registered: what the authorization matrix test compares with its table.
public struct RegisteredRoute: Sendable, Hashable, CustomStringConvertible {
    public let method: String
    public let template: String
    public let guardName: String

    public init(method: String, template: String, guardName: String) {
        self.method = method
        self.template = template
        self.guardName = guardName
    }

    public var description: String { "\(method) \(template) [\(guardName)]" }
}

/// Registers routes with their guards into a ``Router`` and keeps the list of what it
/// registered. Services add their routes through this type only.
public struct GuardedRouter: Sendable {
    public private(set) var router: Router
    public private(set) var registered: [RegisteredRoute] = []

    public init(_ router: Router = Router()) { self.router = router }

    /// Adds `handler` at `method` `template`, behind `guard`.
    public mutating func on(_ method: String, _ template: String, _ guard: RouteGuard, _ handler: @escaping Handler) {
        registered.append(RegisteredRoute(method: method.uppercased(), template: template, guardName: `guard`.name))
        router.on(method, template) { request, ctx in
            var ctx = ctx
            ctx.principal = try await `guard`.authorize(request, ctx)
            return try await handler(request, ctx)
        }
    }

    public mutating func get(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("GET", t, g, h) }
    public mutating func put(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("PUT", t, g, h) }
    public mutating func post(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("POST", t, g, h) }
    public mutating func patch(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("PATCH", t, g, h) }
    public mutating func delete(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("DELETE", t, g, h) }
}
