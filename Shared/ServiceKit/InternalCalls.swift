import Crypto
import Delivery
import FoundationEssentials
import HTTPServer
import JSON
import Platform

/// Service-to-service calls (`/v1/internal/…`): authenticated by a token every service shares
/// (`SIGNET_INTERNAL_TOKEN`) and the calling service's name (`X-Signet-Service`), which the
/// callee records in its audit trail.
public struct InternalCalls: Sendable {
    public let token: String
    public let service: String

    public static let developmentToken = "dev-internal-token"

    /// Bytes of another service's answer read; a longer one is that service failing (the
    /// largest are user-data exports).
    static let answerLimit = 16 << 20

    public init(token: String, service: String) {
        self.token = token
        self.service = service
    }

    public static func fromEnvironment(_ env: Environment = Environment(), service: String) -> InternalCalls {
        InternalCalls(token: env.string("SIGNET_INTERNAL_TOKEN", default: developmentToken), service: service)
    }

    /// The calling service's name, for a request that carries the internal token.
    ///
    /// - Throws: 401 `unauthorized` otherwise.
    public func requireCaller(_ request: HTTPRequest) throws -> String {
        guard let presented = request.bearerToken, presented.utf8.count <= 1024, ConstantTime.secretsEqual(presented, token),
            let caller = request.header("X-Signet-Service"), ["registration", "authentication", "transaction", "oob", "pii"].contains(caller)
        else {
            throw HTTPError(.unauthorized, detail: "Internal calls need the internal token and the calling service.")
        }
        return caller
    }

    /// POSTs JSON to another service and decodes its JSON answer; `timeout` bounds the whole
    /// request, connection included.
    ///
    /// - Throws: 503 `service_unavailable` when the other service cannot be reached or fails;
    ///   its 4xx problem when it refuses (passed on with its code).
    public func post<Body: Encodable, Answer: Decodable>(
        _ url: String, _ body: Body, as: Answer.Type, timeout: TimeInterval = 5
    ) async throws -> Answer {
        try await throwingProblems { try await postTellingTimeouts(url, body, as: Answer.self, timeout: timeout) }
    }

    /// GETs another service's JSON answer, as ``post(_:_:as:timeout:)`` does.
    ///
    /// - Throws: ``post(_:_:as:timeout:)``'s.
    public func get<Answer: Decodable>(_ url: String, as: Answer.Type, timeout: TimeInterval = 5) async throws -> Answer {
        try await throwingProblems { try await send("GET", url, body: nil, as: Answer.self, timeout: timeout) }
    }

    /// `body`, with a ``Failure`` thrown as its problem (the `HTTPError` the edge answers with).
    private func throwingProblems<Answer>(_ body: () async throws -> Answer) async throws -> Answer {
        do {
            return try await body()
        } catch let failure as Failure {
            throw failure.problem
        }
    }

    /// ``post(_:_:as:timeout:)`` for a caller that tells a call that ran out of time from
    /// one that failed (a user-data part names which).
    ///
    /// - Throws: ``Failure``: the same problem, and whether `timeout` passed first.
    public func postTellingTimeouts<Body: Encodable, Answer: Decodable>(
        _ url: String, _ body: Body, as: Answer.Type, timeout: TimeInterval
    ) async throws -> Answer {
        try await send("POST", url, body: try JSONValueEncoder().encodeToBytes(body), as: Answer.self, timeout: timeout)
    }

    /// A call that did not succeed: what ``post(_:_:as:timeout:)`` throws, and whether the
    /// call's own bound passed first. libcurl says so itself (`CURLE_OPERATION_TIMEDOUT`);
    /// another clock is no substitute: libcurl's whole-millisecond difference of two times
    /// rounds up when their microseconds go backwards, so it can end a call up to a
    /// millisecond before the bound by a clock read before the call began.
    public struct Failure: HTTPErrorConvertible, Sendable {
        /// What ``post(_:_:as:timeout:)`` throws for it.
        public let problem: HTTPError
        public let timedOut: Bool

        public var httpError: HTTPError? { problem }

        init(_ problem: HTTPError, timedOut: Bool = false) {
            self.problem = problem
            self.timedOut = timedOut
        }
    }

    private func send<Answer: Decodable>(_ method: String, _ url: String, body: [UInt8]?, as: Answer.Type, timeout: TimeInterval) async throws -> Answer {
        guard let target = URL(string: url) else { throw Failure(HTTPError(.internalError)) }
        var headers = ["Authorization: Bearer \(token)", "X-Signet-Service: \(service)"]
        if body != nil { headers.append("Content-Type: application/json") }
        // W3C Trace Context: the call is a client span of the current work (or starts a
        // trace), and the callee's server span its child.
        let span = TraceContext.current?.child() ?? .root()
        let start = Tracer.now()
        headers.append("traceparent: \(span.traceparent)")
        if let state = span.traceState { headers.append("tracestate: \(state)") }
        let peer = "\(target.host ?? "?"):\(target.port ?? 80)"
        var timedOut = false
        func unavailable(_ why: String) -> Failure {
            Failure(
                HTTPError(.unavailable, detail: "A service this request needs is unavailable; retry.", cause: "internal \(method) to \(peer): \(why)"),
                timedOut: timedOut)
        }
        let result: HTTPClient.Response?
        var failure: String?
        do {
            result = try await HTTPClient.shared.send(
                method, url, headers: headers, body: body, timeout: .milliseconds(Int64(timeout * 1000)), responseLimit: Self.answerLimit)
        } catch let error as HTTPClient.Failure {
            result = nil
            failure = "no answer (curl \(error.code))"
            timedOut = error.isTimeout
        } catch {
            result = nil
            failure = "no answer (\(type(of: error)))"
        }
        if Tracer.shared.isEnabled {
            // The peer's address and the answer's status; never the path (it names users).
            let status = result?.status
            var attributes: [(key: String, value: SpanRecord.Value)] = [
                ("http.request.method", .string(method)), ("server.address", .string(target.host ?? "")), ("server.port", .int(target.port ?? 80)),
            ]
            if let status { attributes.append(("http.response.status_code", .int(status))) }
            Tracer.shared.record(
                SpanRecord(name: "\(method) internal", kind: .client, context: span, startNanos: start, attributes: attributes, isError: status.map { $0 >= 500 } ?? true))
        }
        guard let http = result, http.status > 0 else { throw unavailable(failure ?? "no HTTP answer") }
        guard !http.truncated else { throw unavailable("an answer over \(Self.answerLimit) bytes") }
        let data = http.body
        if (400..<500).contains(http.status), let problem = try? JSONValueDecoder().decode(ProblemEcho.self, from: data) {
            throw Failure(HTTPError(ProblemCode(problem.code, status: http.status, title: problem.title ?? "Refused"), detail: problem.detail, field: problem.field))
        }
        guard (200..<300).contains(http.status) else { throw unavailable("status \(http.status)") }
        // Read by the strict parser, as requests are; another service's answer that does not
        // fit is that service failing.
        guard let answer = try? JSONValueDecoder().decode(Answer.self, from: data, maximumDepth: HTTPRequest.maximumJSONDepth) else {
            throw unavailable("an answer that does not decode")
        }
        return answer
    }

    private struct ProblemEcho: Decodable {
        let code: String
        let title: String?
        let detail: String?
        let field: String?
    }
}

/// Symmetric keys a service reads from the environment (32 bytes, base64url). Without one a
/// random key is used and a warning logged: whatever it protects does not survive a restart
/// and is not shared with other replicas or services.
public enum ServiceKeys {
    public static func key(_ variable: String, _ env: Environment = Environment(), logger: Logger) throws -> [UInt8] {
        if let text = env.optionalString(variable) {
            guard let key = Base64URL.decode(text), key.count == 32 else {
                throw Environment.ConfigurationError(variable: variable, reason: "expected 32 bytes, base64url")
            }
            return key
        }
        // Off loopback ServiceConfiguration refused to start already; never make a random key there.
        guard ServiceConfiguration.isLoopback(env.string("SIGNET_HTTP_HOST", default: "127.0.0.1")) else {
            throw Environment.ConfigurationError(variable: variable, reason: "required off loopback (32 bytes, base64url)")
        }
        logger.warning("\(variable) is not set: using a random key that does not survive a restart")
        return SecureRandom.bytes(32)
    }
}
