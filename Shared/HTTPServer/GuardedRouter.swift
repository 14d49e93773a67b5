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
///
/// Request bodies are bounded per route: ``maxBodyBytes`` (`SIGNET_HTTP_MAX_BODY_BYTES`, 64 KiB
/// by default) for every route, plus what a route declares as `extraBodyBytes` for content the
/// default is not sized for (a transaction's PNG images). The server refuses a body past
/// ``maxBodyBytes`` unless ``bodyLimit(method:path:)`` gives its route more (it asks only then),
/// so other routes never receive more than ``maxBodyBytes``; the route's limit is checked again
/// before its guard runs (the in-process test client has no server), with the same 413
/// `payload_too_large`.
public struct GuardedRouter: Sendable {
    public private(set) var router: Router
    public private(set) var registered: [RegisteredRoute] = []
    /// The body limit of a route that declares no extra bytes.
    public let maxBodyBytes: Int
    /// The largest body any route takes: what the server must receive before refusing.
    public private(set) var largestBodyBytes: Int
    /// Each route's body limit, keyed `"METHOD template"` (only routes above ``maxBodyBytes``).
    public private(set) var bodyLimits: [String: Int] = [:]

    /// - Parameter maxBodyBytes: the body limit of every route (plus its `extraBodyBytes`).
    public init(_ router: Router = Router(), maxBodyBytes: Int = 64 * 1024) {
        self.router = router
        self.maxBodyBytes = maxBodyBytes
        largestBodyBytes = maxBodyBytes
    }

    /// Adds `handler` at `method` `template`, behind `guard`.
    ///
    /// - Parameter extraBodyBytes: bytes of body this route takes beyond ``maxBodyBytes``
    ///   (computed from the bounds of what it carries, never a bare number).
    public mutating func on(_ method: String, _ template: String, _ guard: RouteGuard, extraBodyBytes: Int = 0, _ handler: @escaping Handler) {
        precondition(extraBodyBytes >= 0, "extraBodyBytes is a size")
        registered.append(RegisteredRoute(method: method.uppercased(), template: template, guardName: `guard`.name))
        let limit = maxBodyBytes + extraBodyBytes
        if extraBodyBytes > 0 { bodyLimits["\(method.uppercased()) \(template)"] = limit }
        largestBodyBytes = max(largestBodyBytes, limit)
        router.on(method, template) { request, ctx in
            // Before the guard, as the server's own limit is: a body past the route's bound is
            // refused whoever sends it.
            try Self.check(request, bound: limit)
            var ctx = ctx
            ctx.principal = try await `guard`.authorize(request, ctx)
            return try await handler(request, ctx)
        }
    }

    /// Adds an open `GET` route (``RouteGuard/open``: a guard may wait, so only a route open to
    /// anyone can answer at once) whose handler answers at once: the server runs it on the
    /// receiving thread without a task (see ``ImmediateHandler``). Probes and scrapes.
    public mutating func getOpen(_ template: String, immediate handler: @escaping ImmediateHandler) {
        registered.append(RegisteredRoute(method: "GET", template: template, guardName: RouteGuard.open.name))
        let limit = maxBodyBytes
        router.on("GET", template, immediate: { request, ctx in
            try Self.check(request, bound: limit)
            return try handler(request, ctx)
        })
    }

    /// 413 `payload_too_large` for a body past the route's bound.
    private static func check(_ request: HTTPRequest, bound limit: Int) throws {
        guard request.body.count <= limit else {
            throw HTTPError(.payloadTooLarge, detail: "The body exceeds \(limit) bytes.")
        }
    }

    /// The body bound of the route `method` `path` matches: ``maxBodyBytes`` plus its extra
    /// bytes (``maxBodyBytes`` for a path no route takes more on). The server asks it for a body
    /// past ``maxBodyBytes`` only (`HTTPServerConfiguration.routeBodyLimit`).
    public func bodyLimit(method: String, path: String) -> Int {
        guard !bodyLimits.isEmpty, case .found(_, let template, _) = router.match(method: method.uppercased(), path: path) else { return maxBodyBytes }
        return bodyLimits["\(method.uppercased()) \(template)"] ?? maxBodyBytes
    }

    public mutating func get(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("GET", t, g, h) }
    public mutating func put(_ t: String, _ g: RouteGuard, extraBodyBytes: Int = 0, _ h: @escaping Handler) { on("PUT", t, g, extraBodyBytes: extraBodyBytes, h) }
    public mutating func post(_ t: String, _ g: RouteGuard, extraBodyBytes: Int = 0, _ h: @escaping Handler) { on("POST", t, g, extraBodyBytes: extraBodyBytes, h) }
    public mutating func patch(_ t: String, _ g: RouteGuard, extraBodyBytes: Int = 0, _ h: @escaping Handler) { on("PATCH", t, g, extraBodyBytes: extraBodyBytes, h) }
    public mutating func delete(_ t: String, _ g: RouteGuard, _ h: @escaping Handler) { on("DELETE", t, g, h) }
}
