import Crypto
import Delivery
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Schema

/// Service-to-service calls (`/v1/internal/…`): the caller presents its internal token
/// (`SIGNET_INTERNAL_TOKEN`) and names itself (`X-Signet-Service`); the callee records the name
/// in its audit trail.
///
/// Two ways to trust a caller:
/// - **A token per service** (`SIGNET_INTERNAL_CALLERS`, ``callers``): each service has a token
///   of its own, and every service holds the SHA-256 of each caller's token; a call is admitted
///   only with the token of the service it names, so a service can never call as another, and
///   no service holds another's token.
/// - **One shared token** (without `SIGNET_INTERNAL_CALLERS`): every service holds the same
///   token, so any of them can name itself as any other.
public struct InternalCalls: Sendable {
    /// The token this service presents (and, with one shared token, expects).
    public let token: String
    /// This service's name, sent as `X-Signet-Service`.
    public let service: String
    /// The SHA-256 of each admitted caller's token, by service name; nil: one shared token.
    public let callers: [String: [UInt8]]?

    public static let developmentToken = "dev-internal-token"
    /// The services that may call (`X-Signet-Service`).
    public static let serviceNames = Set(ServiceName.allCases.map(\.rawValue))

    /// Bytes of another service's answer read; a longer one is that service failing (the
    /// largest are user-data exports).
    static let answerLimit = 16 << 20

    public init(token: String, service: String, callers: [String: [UInt8]]? = nil) {
        self.token = token
        self.service = service
        self.callers = callers
    }

    /// `SIGNET_INTERNAL_TOKEN` and `SIGNET_INTERNAL_CALLERS`.
    ///
    /// - Throws: ``Environment/ConfigurationError`` for a malformed `SIGNET_INTERNAL_CALLERS`,
    ///   or one whose entry for `service` is not the hash of its token.
    public static func fromEnvironment(_ env: Environment = Environment(), service: String) throws -> InternalCalls {
        let token = env.string("SIGNET_INTERNAL_TOKEN", default: developmentToken)
        return InternalCalls(token: token, service: service, callers: try callers(env, service: service, token: token))
    }

    /// `SIGNET_INTERNAL_CALLERS`: `name=<SHA-256 of its token, 64 hex digits>`, comma-separated,
    /// each name one of ``serviceNames`` at most once; nil when unset.
    ///
    /// - Throws: ``Environment/ConfigurationError`` naming the variable.
    public static func callers(_ env: Environment, service: String, token: String) throws -> [String: [UInt8]]? {
        guard let text = env.optionalString("SIGNET_INTERNAL_CALLERS") else { return nil }
        func refuse(_ reason: String) -> Environment.ConfigurationError {
            Environment.ConfigurationError(variable: "SIGNET_INTERNAL_CALLERS", reason: reason)
        }
        var map: [String: [UInt8]] = [:]
        for entry in text.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = entry.trimmingWhitespaceAndNewlines().split(separator: "=", maxSplits: 1)
            guard parts.count == 2, serviceNames.contains(String(parts[0])) else {
                throw refuse("expected name=<64 hex digits> entries, names among \(serviceNames.sorted().joined(separator: ", "))")
            }
            let name = String(parts[0])
            let digits = Array(parts[1].utf8)
            guard digits.count == 64, let hash = digits.withUnsafeBufferPointer(HexText.decode), hash.count == 32 else {
                throw refuse("the entry of \(name) is not 64 hex digits (the SHA-256 of its token)")
            }
            guard map.updateValue(hash, forKey: name) == nil else { throw refuse("\(name) is listed twice") }
        }
        guard !map.isEmpty else { throw refuse("set, but lists no caller") }
        if let own = map[service], !ConstantTime.equals(SHA256.hash(Array(token.utf8)), own) {
            throw refuse("the entry of \(service) is not the SHA-256 of this service's SIGNET_INTERNAL_TOKEN")
        }
        return map
    }

    /// The calling service's name, for a request that carries that service's token (with
    /// ``callers``), or the shared token.
    ///
    /// - Throws: 401 `unauthorized` otherwise.
    public func requireCaller(_ request: HTTPRequest) throws -> String {
        let refused = HTTPError(.unauthorized, detail: "Internal calls need the calling service's internal token and its name.")
        guard let presented = request.bearerToken, presented.utf8.count <= 1024, let caller = request.header("X-Signet-Service"),
            Self.serviceNames.contains(caller)
        else { throw refused }
        if let callers {
            // A caller not listed is refused as a wrong token is: the same answer, the same work.
            let expected = callers[caller]
            guard ConstantTime.equals(SHA256.hash(Array(presented.utf8)), expected ?? [UInt8](repeating: 0, count: 32)), expected != nil
            else { throw refused }
        } else {
            guard ConstantTime.secretsEqual(presented, token) else { throw refused }
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

    /// DELETEs another service's resource; its answer (2xx, no body expected) is not read.
    ///
    /// - Throws: ``post(_:_:as:timeout:)``'s.
    public func delete(_ url: String, timeout: TimeInterval = 5) async throws {
        _ = try await throwingProblems { try await send("DELETE", url, body: nil, as: NoAnswer.self, timeout: timeout) }
    }

    /// The answer of a call whose body is not read (``delete(_:timeout:)``).
    private struct NoAnswer: Decodable {}

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
        if let none = NoAnswer() as? Answer { return none }
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

    /// The key of `variable` (as ``key(_:_:logger:)``) with the keys of `<variable>_ACCEPTED`,
    /// which open what they sealed before but seal nothing new: how a sealing key is changed.
    public static func sealingKeys(_ variable: String, _ env: Environment = Environment(), logger: Logger) throws -> SealingKeys {
        let (key, accepted) = try keyWithAccepted(variable, env, logger: logger)
        return try SealingKeys(key: key, accepted: accepted)
    }

    /// The key of `variable` (as ``key(_:_:logger:)``) and the keys of `<variable>_ACCEPTED`
    /// (``acceptedKeys(_:_:)``), which may not list the key itself.
    public static func keyWithAccepted(_ variable: String, _ env: Environment, logger: Logger) throws -> (key: [UInt8], accepted: [[UInt8]]) {
        let accepted = try acceptedKeys(variable, env)
        let key = try key(variable, env, logger: logger)
        guard !accepted.contains(key) else {
            throw Environment.ConfigurationError(variable: "\(variable)_ACCEPTED", reason: "lists \(variable) itself")
        }
        if !accepted.isEmpty {
            logger.info("\(variable): sealing with it, also opening with \(accepted.count) key(s) of \(variable)_ACCEPTED")
        }
        return (key, accepted)
    }

    /// `<variable>_ACCEPTED`: up to ``SealingKeys/maxAccepted`` comma-separated 32-byte
    /// base64url keys, each once. A refusal names the position of the bad entry, never its text.
    public static func acceptedKeys(_ variable: String, _ env: Environment) throws -> [[UInt8]] {
        let name = "\(variable)_ACCEPTED"
        guard let text = env.optionalString(name) else { return [] }
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
        guard items.count <= SealingKeys.maxAccepted else {
            throw Environment.ConfigurationError(variable: name, reason: "at most \(SealingKeys.maxAccepted) keys")
        }
        var keys: [[UInt8]] = []
        for (i, item) in items.enumerated() {
            guard let key = Base64URL.decode(item), key.count == 32 else {
                throw Environment.ConfigurationError(variable: name, reason: "key \(i + 1) must be 32 bytes, base64url")
            }
            guard !keys.contains(key) else {
                throw Environment.ConfigurationError(variable: name, reason: "key \(i + 1) is listed twice")
            }
            keys.append(key)
        }
        return keys
    }
}
