import FoundationEssentials
import Platform
import Synchronization

/// The responder that production and tests share: routing, the per-request context, error
/// mapping to problem+json, access logs and request metrics.
public struct HTTPApplication: Sendable {
    public let router: Router
    public let logger: Logger
    /// Checks of path parameters by name, made before any handler runs (a service checks
    /// `{tenant}` this way). A parameter that fails its check is 400 `invalid_field`.
    public let parameterChecks: [String: ParameterCheck]
    /// The same, in name order (sorted once, not per request).
    private let orderedChecks: [(name: String, check: ParameterCheck)]
    private let metrics = RequestMetrics()

    /// A path parameter's rule: whether a value is valid, and what the problem says otherwise.
    public struct ParameterCheck: Sendable {
        public let isValid: @Sendable (String) -> Bool
        public let requirement: String
        public init(requirement: String, isValid: @escaping @Sendable (String) -> Bool) {
            self.isValid = isValid
            self.requirement = requirement
        }
    }

    public init(router: Router, logger: Logger, parameterChecks: [String: ParameterCheck] = [:]) {
        self.router = router
        self.logger = logger
        self.parameterChecks = parameterChecks
        orderedChecks = parameterChecks.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Produces the response for `request`. Never throws: every failure becomes problem+json.
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        var exchange = begin(request)
        let response: HTTPResponse
        switch router.resolve(method: request.method, path: request.path) {
        case .found(let index, let parameters):
            switch enter(&exchange, request, index: index, parameters: parameters) {
            case .refused(let refusal):
                response = refusal
            case .admitted(let context):
                let handler = router.handler(at: index)
                do {
                    response = try await TraceContext.$current.withValue(exchange.trace) { try await handler(request, context) }
                } catch {
                    response = problem(for: error, request, exchange.logger)
                }
            }
        case let unmatched:
            response = answer(unmatched, &exchange, request)
        }
        return complete(response, exchange, request)
    }

    /// The response for `request` when its route answers at once (``ImmediateHandler``): routed,
    /// checked, logged and counted as ``respond(to:)`` does, on the calling thread, without a
    /// task. Nil when the request is for any other route (or none): the caller runs
    /// ``respond(to:)``. The server tries this first on the receiving thread.
    public func respondImmediately(to request: HTTPRequest) -> HTTPResponse? {
        guard router.mayAnswerImmediately(request.method),
            case .found(let index, let parameters) = router.resolve(method: request.method, path: request.path),
            let handler = router.immediateHandler(at: index)
        else { return nil }
        var exchange = begin(request)
        let response: HTTPResponse
        switch enter(&exchange, request, index: index, parameters: parameters) {
        case .refused(let refusal):
            response = refusal
        case .admitted(let context):
            // No `TraceContext.$current` binding here: outside a task each binding allocates (two
            // heap allocations a request), and a handler that answers at once makes no call and
            // enqueues no event for a trace to continue; its context's logger names the trace.
            do {
                response = try handler(request, context)
            } catch {
                response = problem(for: error, request, exchange.logger)
            }
        }
        return complete(response, exchange, request)
    }

    /// What one request's answer carries from its start to its end.
    private struct Exchange {
        let start: ContinuousClock.Instant
        let trace: TraceContext
        let traceStart: UInt64
        var logger: Logger
        var template = "unmatched"
        /// The route's index names its metrics series (-1: unmatched).
        var routeIndex = -1
    }

    private func begin(_ request: HTTPRequest) -> Exchange {
        let start = ContinuousClock.now
        var logger = self.logger
        // W3C Trace Context: this request's span continues the caller's `traceparent` (the
        // gateway starts one) or starts a trace; handlers see it as `TraceContext.current`.
        let trace = TraceContext.continuing(
            traceparent: request.header(lowercased: "traceparent"), tracestate: request.header(lowercased: "tracestate"))
        // The span's start is read only while spans are recorded (a clock read per request
        // otherwise); a request that began before recording started records no span.
        let traceStart = Tracer.shared.isEnabled ? Tracer.now() : 0
        // The request's log metadata as fields, turned into metadata only for a line written.
        logger.request = Logger.RequestMetadata(requestID: request.requestID, traceID: trace.traceID, spanID: trace.spanID)
        return Exchange(start: start, trace: trace, traceStart: traceStart, logger: logger)
    }

    private enum Entry {
        case admitted(RequestContext)
        case refused(HTTPResponse)
    }

    /// The matched route's context, or its refusal by a parameter check.
    private func enter(_ exchange: inout Exchange, _ request: HTTPRequest, index: Int, parameters: [String: String]) -> Entry {
        exchange.routeIndex = index
        let t = router.template(at: index)
        exchange.template = t
        exchange.logger.request?.route = t
        let refused = orderedChecks.first { name, check in parameters[name].map { !check.isValid($0) } ?? false }
        // Only a checked value reaches the logs.
        if let tenant = parameters["tenant"], let check = parameterChecks["tenant"], check.isValid(tenant) {
            exchange.logger.request?.tenant = tenant
        }
        if let (name, check) = refused {
            return .refused(.problem(.invalid(name, check.requirement), requestID: request.requestID))
        }
        return .admitted(RequestContext(requestID: request.requestID, route: t, parameters: parameters, logger: exchange.logger))
    }

    /// The answer to a request no route takes.
    private func answer(_ resolution: Router.Resolution, _ exchange: inout Exchange, _ request: HTTPRequest) -> HTTPResponse {
        switch resolution {
        case .found:
            preconditionFailure("a matched request has a handler")
        case .notFound:
            return .problem(HTTPError(.notFound, detail: "No route for this path."), requestID: request.requestID)
        case .invalidPath:
            return .problem(
                HTTPError(.invalidPath, detail: "The path holds a control character, invalid UTF-8, a broken escape or an encoded slash."),
                requestID: request.requestID)
        case .methodNotAllowed(let index, let allowed):
            exchange.routeIndex = index
            exchange.template = router.template(at: index)
            return .problem(
                HTTPError(.methodNotAllowed, detail: "Use one of: \(allowed.joined(separator: ", ")).",
                          headers: [("Allow", allowed.joined(separator: ", "))]),
                requestID: request.requestID)
        }
    }

    /// A handler's error as problem+json, logged as its kind asks.
    private func problem(for error: any Error, _ request: HTTPRequest, _ logger: Logger) -> HTTPResponse {
        switch error {
        case let error as HTTPError:
            if error.code.status >= 500 {
                var metadata: Logger.Metadata = [LogKey.errorCode: "\(error.code.rawValue)", "signet.source": "\(error.file):\(error.line)"]
                if let cause = error.cause { metadata["signet.error.cause"] = .string(cause) }
                logger.error("request failed", metadata: metadata)
            }
            return .problem(error, requestID: request.requestID)
        case is CancellationError:
            return .problem(HTTPError(.requestTimeout, detail: "The request did not finish in time."), requestID: request.requestID)
        case let error as any HTTPErrorConvertible where error.httpError != nil:
            let mapped = error.httpError ?? HTTPError(.internalError)
            // Such errors' descriptions name kinds and codes only (no SQL, no values).
            logger.log(
                level: mapped.code.status >= 500 ? .error : .info, "request failed",
                metadata: [LogKey.errorCode: "\(mapped.code.rawValue)", LogKey.error: "\(error)"])
            return .problem(mapped, requestID: request.requestID)
        default:
            // Unknown errors: logged with their type only (descriptions of driver errors may
            // carry SQL or values); the client gets no internals.
            logger.error("unhandled error", metadata: [LogKey.error: "\(String(reflecting: type(of: error))): \(error)"])
            return .problem(HTTPError(.internalError, detail: "An internal error occurred."), requestID: request.requestID)
        }
    }

    /// The request id header, HEAD's empty body, the metrics, the span and the access log.
    private func complete(_ response: HTTPResponse, _ exchange: Exchange, _ request: HTTPRequest) -> HTTPResponse {
        var response = response
        let template = exchange.template
        response.headers.append(("X-Request-Id", request.requestID))
        if request.method == "HEAD" { response.body = [] }
        let elapsed = ContinuousClock.now - exchange.start
        let series = metrics.series(method: request.method, routeIndex: exchange.routeIndex, route: template, status: response.status)
        series.requests.increment()
        series.duration.record(elapsed)
        // The access log names the route template, never the raw path: paths carry usernames.
        // Probes and scrapes are logged at debug: they would drown the access log (and are
        // not traced: they would drown the traces).
        let quiet = template == "/healthz" || template == "/readyz" || template == "/metrics"
        if !quiet, exchange.traceStart != 0, Tracer.shared.isEnabled {
            Tracer.shared.record(
                SpanRecord.server(request.method, route: template, status: response.status, context: exchange.trace, start: exchange.traceStart))
        }
        exchange.logger.log(
            level: response.status >= 500 ? .warning : quiet ? .debug : .info, "request",
            metadata: [
                LogKey.method: .string(request.method), LogKey.route: .string(template), LogKey.status: .string(String(response.status)),
                LogKey.durationMs: .string(NumberText.milliseconds(elapsed)),
            ])
        return response
    }
}

/// The request counter and latency histogram of each method, route and status, created once:
/// building a series' label string and finding it in the registry on every request showed up
/// in profiles, and so did the key of this cache when it was three strings (the route template
/// hashed, the status formatted as text on every request). The key is now the route's index
/// in the router, the status as a number and the method (a small string: no allocation).
final class RequestMetrics: Sendable {
    struct Key: Hashable {
        let method: String
        /// The route's index in the router; -1 for unmatched.
        let route: Int
        let status: Int
    }

    struct Series: Sendable {
        let requests: Counter
        let duration: Platform.Timer
    }

    private let cache = PlainLock<[Key: Series]>([:])

    /// The series of `method`, the route at `routeIndex` (whose template is `route`, the
    /// label; "unmatched" for -1) and `status`.
    func series(method: String, routeIndex: Int, route: String, status: Int) -> Series {
        let key = Key(method: method, route: routeIndex, status: status)
        if let s = cache.withLock({ $0[key] }) { return s }
        // Routes come from a closed set (unknown paths are "unmatched"); methods need not, so
        // the cache stops growing at a bound.
        let dims: Dimensions = [("method", method), ("route", route), ("status", String(status))]
        let s = Series(
            requests: Counter(label: "signet_http_requests_total", dimensions: dims),
            duration: Platform.Timer(label: "signet_http_request_duration_seconds", dimensions: dims))
        cache.withLock { if $0.count < 4096 { $0[key] = s } }
        return s
    }
}

extension SpanRecord {
    /// The span of one request: named `METHOD /route/{template}` (never the raw path, which
    /// carries usernames), with the method, template and status as attributes; an error when
    /// the status is 5xx (OpenTelemetry's HTTP server convention).
    static func server(_ method: String, route: String, status: Int, context: TraceContext, start: UInt64) -> SpanRecord {
        SpanRecord(
            name: "\(method) \(route)", kind: .server, context: context, startNanos: start,
            attributes: [
                ("http.request.method", .string(method)), ("http.route", .string(route)), ("http.response.status_code", .int(status)),
            ],
            isError: status >= 500)
    }
}
