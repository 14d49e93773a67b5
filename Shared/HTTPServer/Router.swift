import Platform

/// Who is calling, as established by a handler's authentication step.
public enum Principal: Sendable, Equatable {
    case anonymous
    /// A holder of the operator's admin token.
    case admin
    /// A relying party's backend, by one of its tenant's API keys.
    case relyingParty(tenant: String, keyID: String)
    /// A signed-in user, by a session token the authentication service issued (`sub`).
    case user(tenant: String, username: String)
    /// A user signing up, by a sign-up token (`sign_up` claim): may register methods, nothing else.
    case signingUp(tenant: String, username: String)
    /// Another Signet service, by the internal token (`/v1/internal/…` routes).
    case service(String)
}

/// The typed per-request context handed to every handler.
public struct RequestContext: Sendable {
    public let requestID: String
    /// The route template that matched, e.g. `/v1/tenants/{tenant}`.
    public let route: String
    /// Path parameters by name.
    public let parameters: [String: String]
    /// The tenant named by the path, when the route has a `{tenant}` segment.
    public let tenant: String?
    public var principal: Principal
    /// A logger carrying the request id, route and tenant.
    public var logger: Logger

    public init(requestID: String, route: String, parameters: [String: String], principal: Principal = .anonymous, logger: Logger) {
        self.requestID = requestID
        self.route = route
        self.parameters = parameters
        self.tenant = parameters["tenant"]
        self.principal = principal
        self.logger = logger
    }

    /// The path parameter `name`; routes guarantee the parameters they declare.
    public func parameter(_ name: String) -> String {
        parameters[name] ?? ""
    }
}

/// A request handler.
public typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse

/// Maps method and path templates (`/v1/tenants/{tenant}`) to handlers.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let template: String
        let segments: [Segment]
        let handler: Handler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The outcome of matching a request.
    public enum Match: Sendable {
        case found(handler: Handler, template: String, parameters: [String: String])
        case methodNotAllowed(template: String, allowed: [String])
        case notFound
    }

    private(set) var routes: [Route] = []

    public init() {}

    /// Adds a route. Templates are `/`-separated literals and `{name}` parameters.
    public mutating func on(_ method: String, _ template: String, _ handler: @escaping Handler) {
        let segments = template.split(separator: "/", omittingEmptySubsequences: true).map { s -> Segment in
            if s.hasPrefix("{") && s.hasSuffix("}") { return .parameter(String(s.dropFirst().dropLast())) }
            return .literal(String(s))
        }
        routes.append(Route(method: method.uppercased(), template: template, segments: segments, handler: handler))
    }

    public mutating func get(_ t: String, _ h: @escaping Handler) { on("GET", t, h) }
    public mutating func put(_ t: String, _ h: @escaping Handler) { on("PUT", t, h) }
    public mutating func post(_ t: String, _ h: @escaping Handler) { on("POST", t, h) }
    public mutating func patch(_ t: String, _ h: @escaping Handler) { on("PATCH", t, h) }
    public mutating func delete(_ t: String, _ h: @escaping Handler) { on("DELETE", t, h) }

    /// Longest parameter value accepted; longer values do not match any route.
    public static let maxParameterLength = 256

    /// Finds the handler for `method` and `path`.
    public func match(method: String, path: String) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        var allowed: [String] = []
        var allowedTemplate: String?
        for route in routes where route.segments.count == parts.count {
            var params: [String: String] = [:]
            var ok = true
            for (seg, part) in zip(route.segments, parts) {
                switch seg {
                case .literal(let l):
                    if l != part { ok = false }
                case .parameter(let name):
                    if part.isEmpty || part.utf8.count > Router.maxParameterLength { ok = false } else { params[name] = String(part) }
                }
                if !ok { break }
            }
            guard ok else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(handler: route.handler, template: route.template, parameters: params)
            }
            allowed.append(route.method)
            allowedTemplate = route.template
        }
        if let allowedTemplate { return .methodNotAllowed(template: allowedTemplate, allowed: allowed) }
        return .notFound
    }
}
