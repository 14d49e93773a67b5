import CCurl

/// Outbound HTTP requests through libcurl: the services' calls to each other, to relying
/// parties (JWKS, password checks), to the MDS3 BLOB and to the OTLP collector.
///
/// It replaces `URLSession`, which lives in FoundationNetworking and so pulls the whole of
/// Foundation, FoundationInternationalization and ICU into every service (issue 14: about
/// 8 MB of resident pages per process). libcurl is the library FoundationNetworking itself
/// calls, so the transport is the one the services had before.
///
/// Each request is one blocking `curl_easy_perform` on one of the client's lanes
/// (``BlockingLanes``), awaited through a checked continuation: the cooperative pool never
/// blocks, and the lanes bound the threads the client can hold. Cancelling the awaiting task
/// aborts the transfer and throws `CancellationError`.
///
/// Only `http` and `https` are allowed (redirects included), or `https` alone for a request
/// sent with `httpsOnly`. Header lines with CR, LF or NUL are refused before anything is sent.
public final class HTTPClient: Sendable {
    /// An answer: its status and body.
    public struct Response: Sendable, Hashable {
        /// The HTTP status.
        public let status: Int
        /// The response body, at most the request's `responseLimit` bytes.
        public let body: [UInt8]
        /// Whether the body was longer than `responseLimit` (the rest was read and dropped).
        public let truncated: Bool
    }

    /// A request that got no HTTP answer: the libcurl code and its text (never the URL's
    /// path or a header: they may name users or carry credentials).
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// The `CURLcode`.
        public let code: Int
        /// libcurl's description of the code and its error buffer.
        public let text: String
        /// Whether the request timed out.
        public var isTimeout: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }
        public var description: String { text }
    }

    /// The process's client for short calls (services, relying parties, the collector):
    /// eight lanes.
    public static let shared = HTTPClient(label: "signet.http.client", lanes: 8)

    private let lanes: BlockingLanes

    /// A client with its own lanes.
    ///
    /// - Parameters:
    ///   - label: The lanes' dispatch queue label prefix.
    ///   - lanes: How many requests may run at once; a request behind a slow one on the same
    ///     lane waits.
    public init(label: String, lanes: Int) {
        self.lanes = BlockingLanes(label: label, count: lanes)
    }

    /// Sends one request and returns its answer, whatever its status.
    ///
    /// - Parameters:
    ///   - method: `GET`, `POST`, `PUT`, `DELETE`…
    ///   - url: An absolute `http` or `https` URL.
    ///   - headers: Header lines, `Name: value`.
    ///   - body: The request body, sent as given (nil: none).
    ///   - timeout: The bound on the whole request, connection included.
    ///   - responseLimit: Bytes of the response body kept.
    ///   - followRedirects: Whether 3xx answers are followed (up to 5, `http`/`https` only),
    ///     as `URLSession` does; off, a 3xx is returned as the answer.
    ///   - httpsOnly: Refuse `http`, for the URL and for every redirect (libcurl's
    ///     `CURLE_UNSUPPORTED_PROTOCOL`): an `https` URL cannot be downgraded by a redirect.
    /// - Returns: The status and body.
    /// - Throws: ``Failure`` when no HTTP answer came (unresolved host, refused connection,
    ///   timeout, malformed URL, a header line with CR/LF/NUL), `CancellationError` when the
    ///   task is cancelled.
    public func send(
        _ method: String, _ url: String, headers: [String] = [], body: [UInt8]? = nil, timeout: Duration,
        responseLimit: Int, followRedirects: Bool = false, httpsOnly: Bool = false
    ) async throws -> Response {
        for line in headers + [method] where line.utf8.contains(where: { $0 == 10 || $0 == 13 || $0 == 0 }) {
            throw Failure(code: Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue), text: "a header line or method with CR, LF or NUL")
        }
        // Blocking libcurl call: runs on a lane, awaited through a checked continuation.
        return try await lanes.run { cancellation in
            try Self.perform(
                method, url, headers: headers, body: body, timeout: timeout, responseLimit: responseLimit, followRedirects: followRedirects,
                protocols: httpsOnly ? "https" : "http,https", cancellation: cancellation)
        }
    }

    // MARK: - Transfer (on a lane)

    private static func perform(
        _ method: String, _ url: String, headers: [String], body: [UInt8]?, timeout: Duration, responseLimit: Int, followRedirects: Bool,
        protocols: String, cancellation: CancellationFlag
    ) throws -> Response {
        // One byte more than the limit tells a body that was cut from one that fits.
        let context = CurlTransferContext(responseLimit: responseLimit + 1, cancellation: cancellation)
        let curl: CurlEasy
        do {
            curl = try CurlEasy()
            try curl.set(CURLOPT_URL, url)
            try curl.set(CURLOPT_PROTOCOLS_STR, protocols)
            try curl.set(CURLOPT_TIMEOUT_MS, timeout.curlMilliseconds)
            if followRedirects {
                try curl.set(CURLOPT_FOLLOWLOCATION, 1)
                try curl.set(CURLOPT_MAXREDIRS, 5)
                try curl.set(CURLOPT_REDIR_PROTOCOLS_STR, protocols)
            }
            // "Expect:" keeps libcurl from waiting for a 100-continue on larger bodies.
            try curl.set(CURLOPT_HTTPHEADER, list: headers + ["Expect:"])
            if let body {
                try curl.set(CURLOPT_POST, 1)
                // POSTFIELDSIZE first: COPYPOSTFIELDS copies that many bytes.
                try curl.set(CURLOPT_POSTFIELDSIZE, body.count)
                try body.withUnsafeBytes { bytes in
                    // An empty array may have no base address; libcurl needs a valid pointer.
                    var empty: UInt8 = 0
                    if let base = bytes.baseAddress {
                        try curl.set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: base))
                    } else {
                        try curl.set(CURLOPT_COPYPOSTFIELDS, pointer: &empty)
                    }
                }
            }
            if method != (body == nil ? "GET" : "POST") {
                try curl.set(CURLOPT_CUSTOMREQUEST, method)
            }
            try curl.install(context)
        } catch let failure as CurlFailure {
            throw Failure(code: Int(failure.code.rawValue), text: failure.text)
        }
        do {
            try withExtendedLifetime(context) { try curl.perform() }
        } catch let failure as CurlFailure {
            if failure.code == CURLE_ABORTED_BY_CALLBACK, cancellation.isCancelled {
                throw CancellationError()
            }
            throw Failure(code: Int(failure.code.rawValue), text: failure.text)
        }
        let received = context.response
        let truncated = received.count > responseLimit
        return Response(status: curl.responseCode, body: truncated ? Array(received.prefix(responseLimit)) : received, truncated: truncated)
    }
}
