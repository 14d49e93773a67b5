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
    /// A user who may only register methods, by a registration-only token (`sign_up` claim): a
    /// sign-up's, a sign-in's whose registration rules ENFORCE_REGISTRATION, or a QR
    /// registration's; `kind` says which, and each route that takes one names the kinds it takes.
    case signingUp(tenant: String, username: String, kind: RegistrationTokenKind)
    /// Another Signet service, by the internal token (`/v1/internal/…` routes).
    case service(String)
    /// A registered device of the tenant, by a proof signed with its device key (oob
    /// `deviceSigned` routes).
    case device(tenant: String, deviceId: String)
    /// The holder of a device key not registered yet, by a proof signed with the key the
    /// request's body carries (the oob device create-or-update call); `thumbprint` is the key's
    /// RFC 7638 thumbprint, base64url.
    case deviceKeyHolder(tenant: String, thumbprint: String)
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

/// A handler that answers at once: it neither waits nor blocks (a constant answer, a rendering
/// of in-memory state). The server runs it on the thread that received the request, without a
/// task (``HTTPApplication/respondImmediately(to:)``); everywhere else it is an ordinary handler.
/// Run at once, it sees no ``TraceContext/current`` (it calls nothing that would continue the
/// trace); its context's logger carries the request's trace and span ids.
public typealias ImmediateHandler = @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse

/// Maps method and path templates (`/v1/tenants/{tenant}`) to handlers.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let template: String
        let segments: [Segment]
        /// `segments` for the byte-level matcher: a literal's UTF-8, or nil for a parameter
        /// (its name at the same index of `segments`).
        let literals: [[UInt8]?]
        let handler: Handler
        /// The same handler, when it answers at once (``ImmediateHandler``).
        let immediate: ImmediateHandler?
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
        /// The path cannot name anything here (see ``Router/segments(of:)``): 400
        /// `invalid_path`, before any handler runs. `reason` is for logs, not for clients.
        case invalidPath(reason: String)
    }

    private(set) var routes: [Route] = []
    /// Indices into `routes` by segment count, in registration order: a path is compared only
    /// with the routes that have as many segments (no other can match, so the first match in
    /// registration order is unchanged).
    private var routesBySegmentCount: [[Int]] = []
    /// The methods of the routes that answer at once: a request with any other method is not
    /// resolved a second time by the server's immediate attempt (a sign-in's POSTs, say).
    private var immediateMethods: Set<String> = []
    /// Whether any route answers at once.
    public var hasImmediateRoutes: Bool { !immediateMethods.isEmpty }

    /// Whether a route that answers at once may take `method` (HEAD is served by GET routes).
    func mayAnswerImmediately(_ method: String) -> Bool {
        !immediateMethods.isEmpty && (immediateMethods.contains(method) || (method == "HEAD" && immediateMethods.contains("GET")))
    }

    public init() {}

    /// Adds a route. Templates are `/`-separated literals and `{name}` parameters.
    public mutating func on(_ method: String, _ template: String, _ handler: @escaping Handler) {
        add(method, template, handler, immediate: nil)
    }

    /// Adds a route whose handler answers at once (see ``ImmediateHandler``).
    public mutating func on(_ method: String, _ template: String, immediate: @escaping ImmediateHandler) {
        add(method, template, { try immediate($0, $1) }, immediate: immediate)
    }

    private mutating func add(_ method: String, _ template: String, _ handler: @escaping Handler, immediate: ImmediateHandler?) {
        let segments = template.split(separator: "/", omittingEmptySubsequences: true).map { s -> Segment in
            if s.hasPrefix("{") && s.hasSuffix("}") { return .parameter(String(s.dropFirst().dropLast())) }
            return .literal(String(s))
        }
        let literals = segments.map { s -> [UInt8]? in
            if case .literal(let l) = s { return Array(l.utf8) }
            return nil
        }
        routes.append(
            Route(method: method.uppercased(), template: template, segments: segments, literals: literals, handler: handler, immediate: immediate))
        if immediate != nil { immediateMethods.insert(method.uppercased()) }
        let count = segments.count
        while routesBySegmentCount.count <= count { routesBySegmentCount.append([]) }
        routesBySegmentCount[count].append(routes.count - 1)
    }

    public mutating func get(_ t: String, _ h: @escaping Handler) { on("GET", t, h) }
    public mutating func put(_ t: String, _ h: @escaping Handler) { on("PUT", t, h) }
    public mutating func post(_ t: String, _ h: @escaping Handler) { on("POST", t, h) }
    public mutating func patch(_ t: String, _ h: @escaping Handler) { on("PATCH", t, h) }
    public mutating func delete(_ t: String, _ h: @escaping Handler) { on("DELETE", t, h) }

    /// Longest parameter value accepted; longer values do not match any route.
    public static let maxParameterLength = 256

    /// Finds the handler for `method` and `path`.
    ///
    /// `path` is the request target's path as sent, still percent-encoded (the server does
    /// not decode it: libmicrohttpd's decoding turned `%00` into a C string's end, so `a%00b`
    /// reached handlers as `a`). Matching is exact: a trailing or doubled slash makes
    /// another path, which matches no route (404), as the gateway's location rules see it.
    public func match(method: String, path: String) -> Match {
        switch resolve(method: method, path: path) {
        case .found(let index, let parameters): .found(handler: routes[index].handler, template: routes[index].template, parameters: parameters)
        case .methodNotAllowed(let index, let allowed): .methodNotAllowed(template: routes[index].template, allowed: allowed)
        case .notFound: .notFound
        case .invalidPath(let reason): .invalidPath(reason: reason)
        }
    }

    /// ``match(method:path:)`` naming the route by its index in ``routes`` (the server keeps
    /// per-route state, such as metrics series, by it).
    enum Resolution {
        case found(index: Int, parameters: [String: String])
        case methodNotAllowed(index: Int, allowed: [String])
        case notFound
        case invalidPath(reason: String)
    }

    /// The route at `index` (from a ``Resolution``).
    func route(at index: Int) -> Route { routes[index] }

    /// The template of the route at `index` (no copy of the whole route: five references).
    func template(at index: Int) -> String { routes[index].template }

    /// The handler of the route at `index`.
    func handler(at index: Int) -> Handler { routes[index].handler }

    /// The route's handler when it answers at once.
    func immediateHandler(at index: Int) -> ImmediateHandler? { routes[index].immediate }

    /// Resolves `method` and `path` as ``match(method:path:)`` does.
    ///
    /// A path of printable ASCII without `%` (what every ordinary request sends: the server
    /// escapes any other raw byte, see HTTPServer's `requestPath`) is its own decoding, and is
    /// matched over its UTF-8 in place: no array of segments, no string per segment, a
    /// `String` only for each captured parameter. Any other path takes the general matcher,
    /// which decodes each segment first (``segments(of:)``); both give the same answer for
    /// every path (`RouterTests`, the differential test over generated paths).
    func resolve(method: String, path: String) -> Resolution {
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        var path = path
        if let plain = path.withUTF8({ Router.isPlain($0) ? resolvePlain(method: method, path: $0) : nil }) { return plain }
        return resolveDecoding(method: method, path: path)
    }

    /// Whether every byte of `path` is printable ASCII other than `%` (so no segment needs
    /// decoding or can be refused by ``segments(of:)``).
    static func isPlain(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in path where b <= 0x20 || b >= 0x7F || b == UInt8(ascii: "%") { return false }
        return true
    }

    /// The byte-level matcher for a plain path (see ``resolve(method:path:)``); `path` starts
    /// with `/`.
    private func resolvePlain(method: String, path: UnsafeBufferPointer<UInt8>) -> Resolution {
        let slash = UInt8(ascii: "/")
        // "/" has no segment; otherwise one segment per slash (empty ones kept).
        var count = 0
        if path.count > 1 { for b in path where b == slash { count += 1 } }
        guard count < routesBySegmentCount.count else { return .notFound }
        var allowed: [String] = []
        var allowedIndex: Int?
        // Segment bounds are found again for each candidate route: a handful of bytes, cheaper
        // than allocating them.
        for index in routesBySegmentCount[count] {
            var start = 1
            var ok = true
            var hasParameter = false
            // The route's fields are read in place (a copy of the route retained and released
            // five references per candidate: visible in profiles).
            for literal in routes[index].literals {
                var end = start
                while end < path.count && path[end] != slash { end += 1 }
                let length = end - start
                if let literal {
                    if length != literal.count || !literal.withUnsafeBufferPointer({ l in memcmpEqual(l, path, from: start) }) { ok = false }
                } else {
                    if length == 0 || length > Router.maxParameterLength { ok = false }
                    hasParameter = true
                }
                if !ok { break }
                start = end + 1
            }
            guard ok else { continue }
            let parameters = hasParameter ? Router.parameters(routes[index], path) : [:]
            if Router.hasDotSegment(parameters) { return .invalidPath(reason: "dot segment") }
            let routeMethod = routes[index].method
            if routeMethod == method || (method == "HEAD" && routeMethod == "GET") {
                return .found(index: index, parameters: parameters)
            }
            allowed.append(routeMethod)
            allowedIndex = index
        }
        if let allowedIndex { return .methodNotAllowed(index: allowedIndex, allowed: allowed) }
        return .notFound
    }

    /// The values of `route`'s parameters in `path` (which it matched), by name.
    private static func parameters(_ route: Route, _ path: UnsafeBufferPointer<UInt8>) -> [String: String] {
        var parameters: [String: String] = [:]
        var start = 1
        for (i, literal) in route.literals.enumerated() {
            var end = start
            while end < path.count && path[end] != UInt8(ascii: "/") { end += 1 }
            if literal == nil, case .parameter(let name) = route.segments[i] {
                parameters[name] = String(decoding: UnsafeBufferPointer(rebasing: path[start..<end]), as: UTF8.self)
            }
            start = end + 1
        }
        return parameters
    }

    /// Dot segments name nothing as values: a route they would fill is refused rather than
    /// handed values a handler might build another URL from (both matchers).
    private static func hasDotSegment(_ parameters: [String: String]) -> Bool {
        parameters.values.contains { $0 == "." || $0 == ".." }
    }

    /// The general matcher: every segment decoded (and checked) first.
    func resolveDecoding(method: String, path: String) -> Resolution {
        let parts: [String]
        switch Router.segments(of: path) {
        case .success(let p): parts = p
        case .failure(let error): return .invalidPath(reason: error.reason)
        }
        var allowed: [String] = []
        var allowedIndex: Int?
        guard parts.count < routesBySegmentCount.count else { return .notFound }
        for index in routesBySegmentCount[parts.count] {
            let route = routes[index]
            var params: [String: String] = [:]
            var ok = true
            for (seg, part) in zip(route.segments, parts) {
                switch seg {
                case .literal(let l):
                    if l != part { ok = false }
                case .parameter(let name):
                    if part.isEmpty || part.utf8.count > Router.maxParameterLength { ok = false } else { params[name] = part }
                }
                if !ok { break }
            }
            guard ok else { continue }
            if Router.hasDotSegment(params) { return .invalidPath(reason: "dot segment") }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(index: index, parameters: params)
            }
            allowed.append(route.method)
            allowedIndex = index
        }
        if let allowedIndex { return .methodNotAllowed(index: allowedIndex, allowed: allowed) }
        return .notFound
    }

    /// Why a path was refused.
    public struct PathError: Error, Sendable {
        public let reason: String
    }

    /// The segments of `path`, each percent-decoded after splitting on `/`, empty segments
    /// kept (`/a/` is `["a", ""]`; `/` is `[]`).
    ///
    /// A segment is refused when it has a broken escape (`%zz`, `%4`), is not UTF-8 once
    /// decoded, holds a control character (U+0000–U+001F, U+007F, U+0080–U+009F: they end C
    /// strings, split log lines, or hide in terminals), or holds an encoded `/` (`%2F`): no
    /// name in Signet contains a slash, and a value with one would be a second segment to
    /// whoever rebuilds a URL from it.
    static func segments(of path: String) -> Result<[String], PathError> {
        var utf8 = Substring(path).utf8
        if utf8.first == UInt8(ascii: "/") { utf8 = utf8.dropFirst() }
        if utf8.isEmpty { return .success([]) }
        var result: [String] = []
        for raw in utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            // Fast path: printable ASCII without escapes is its own decoding.
            if raw.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }) {
                result.append(String(decoding: raw, as: UTF8.self))
                continue
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(raw.count)
            var i = raw.startIndex
            while i != raw.endIndex {
                let b = raw[i]
                if b == UInt8(ascii: "%") {
                    let h = raw.index(after: i)
                    guard h != raw.endIndex, raw.index(after: h) != raw.endIndex,
                        let hi = PercentEncoding.hexValue(raw[h]), let lo = PercentEncoding.hexValue(raw[raw.index(after: h)])
                    else { return .failure(PathError(reason: "broken percent escape")) }
                    let decoded = hi << 4 | lo
                    if decoded == UInt8(ascii: "/") { return .failure(PathError(reason: "encoded slash")) }
                    bytes.append(decoded)
                    i = raw.index(h, offsetBy: 2)
                } else {
                    bytes.append(b)
                    i = raw.index(after: i)
                }
            }
            guard let segment = String(validating: bytes, as: UTF8.self) else { return .failure(PathError(reason: "not UTF-8")) }
            if segment.unicodeScalars.contains(where: { $0.value < 0x20 || ($0.value >= 0x7F && $0.value <= 0x9F) }) {
                return .failure(PathError(reason: "control character"))
            }
            result.append(segment)
        }
        return .success(result)
    }
}

/// Whether `path[from..<from + literal.count]` equals `literal` (the caller checked the length).
private func memcmpEqual(_ literal: UnsafeBufferPointer<UInt8>, _ path: UnsafeBufferPointer<UInt8>, from: Int) -> Bool {
    for i in 0..<literal.count where literal[i] != path[from + i] { return false }
    return true
}

extension ProblemCode {
    /// The path cannot name a resource: a control character, invalid UTF-8, a broken escape,
    /// an encoded slash or a dot segment where a name belongs.
    public static let invalidPath = ProblemCode("invalid_path", status: 400, title: "Invalid path")
}
