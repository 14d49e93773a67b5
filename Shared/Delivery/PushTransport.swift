import CCurl

/// Posts push notifications to APNs (the HTTP/2 provider API) and FCM (HTTP v1) through
/// libcurl over HTTP/2, and OAuth token requests to the FCM token endpoint.
///
/// `https` URLs negotiate HTTP/2 by ALPN (both providers speak only HTTP/2 to providers: a
/// connection that ends up on HTTP/1.1 is refused as `push_failed`); `http` URLs (the local
/// sink) use HTTP/2 with prior knowledge (h2c), so the sink sees the same protocol.
///
/// The provider's answer is classified by ``error(forStatus:provider:body:)``:
///
/// | outcome | code | transient |
/// | --- | --- | --- |
/// | APNs 410, APNs 400 `BadDeviceToken`, FCM 404 / `UNREGISTERED` | `push_token_gone` | no: mark the token invalid |
/// | other 400 | `push_rejected` | no |
/// | 401, 403 | `push_unauthorized` | no |
/// | 429 | `push_throttled` | yes |
/// | 5xx | `push_unavailable` | yes |
/// | connection refused, timeout, broken connection | `push_connect_failed`, `push_timeout`, `push_connection_lost` | yes |
///
/// Transfers are blocking libcurl calls on the client's lanes (``BlockingLanes``), awaited
/// through continuations; the cooperative pool never blocks. Each transfer has its own handle
/// and connection (no connection reuse yet: APNs prefers long-lived connections).
public final class PushTransport: Sendable {
    /// Which API a request goes to, for the classification of its answer.
    public enum Provider: String, Sendable {
        /// APNs, FCM, FCM's token endpoint, and an RP's callback URL (HTTP/1.1 or 2, any 2xx).
        case apns, fcm, oauth, callback
    }

    /// Timeouts, CA bundle and concurrency.
    public struct Configuration: Sendable {
        public var connectTimeout: Duration
        public var timeout: Duration
        /// A PEM CA bundle for `https` (nil: the system's).
        public var caBundlePath: String?
        public var maximumConcurrentSends: Int

        public init(connectTimeout: Duration = .seconds(5), timeout: Duration = .seconds(10), caBundlePath: String? = nil, maximumConcurrentSends: Int = 4) {
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.caBundlePath = caBundlePath
            self.maximumConcurrentSends = maximumConcurrentSends
        }
    }

    /// What the provider answered.
    public struct Response: Sendable {
        public let status: Int
        /// At most ``PushTransport/responseLimit`` bytes.
        public let body: [UInt8]
    }

    public static let responseLimit = 16 * 1024

    public let configuration: Configuration
    private let lanes: BlockingLanes

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        lanes = BlockingLanes(label: "signet.delivery.push", count: configuration.maximumConcurrentSends)
    }

    /// POSTs `body` to `url` with `headers` (`Name: value` lines) and returns the answer,
    /// whatever its status.
    ///
    /// - Throws: ``DeliveryError`` `push_connect_failed`, `push_timeout`,
    ///   `push_connection_lost` or `push_failed` when no complete HTTP/2 answer came;
    ///   `CancellationError` when the task is cancelled.
    ///
    /// - Parameter requireHTTP2: false for a peer that may speak HTTP/1.1 (an RP's callback
    ///   URL): libcurl then offers HTTP/2 by ALPN on `https` and uses HTTP/1.1 otherwise.
    public func post(url: String, headers: [String], body: [UInt8], requireHTTP2: Bool = true) async throws -> Response {
        let configuration = configuration
        // Blocking libcurl call: runs on a lane, awaited through a checked continuation.
        return try await lanes.run { cancellation in
            try Self.perform(configuration, url: url, headers: headers, body: body, requireHTTP2: requireHTTP2, cancellation: cancellation)
        }
    }

    private static func perform(
        _ configuration: Configuration, url: String, headers: [String], body: [UInt8], requireHTTP2: Bool, cancellation: CancellationFlag
    ) throws -> Response {
        let context = CurlTransferContext(responseLimit: responseLimit, cancellation: cancellation)
        let curl: CurlEasy
        do {
            curl = try CurlEasy()
            try curl.set(CURLOPT_URL, url)
            try curl.set(CURLOPT_PROTOCOLS_STR, "http,https")
            let version = url.hasPrefix("https://") || !requireHTTP2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
            try curl.set(CURLOPT_HTTP_VERSION, version)
            try curl.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
            try curl.set(CURLOPT_TIMEOUT_MS, configuration.timeout.curlMilliseconds)
            if let caBundlePath = configuration.caBundlePath { try curl.set(CURLOPT_CAINFO, caBundlePath) }
            try curl.set(CURLOPT_HTTPHEADER, list: headers + ["Expect:"])
            try curl.set(CURLOPT_POST, 1)
            // POSTFIELDSIZE first: COPYPOSTFIELDS copies that many bytes.
            try curl.set(CURLOPT_POSTFIELDSIZE, body.count)
            try body.withUnsafeBytes { bytes in
                try curl.set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            try curl.install(context)
        } catch let failure as CurlFailure {
            throw DeliveryError(.pushFailed, detail: failure.text)
        }
        do {
            try withExtendedLifetime(context) { try curl.perform() }
        } catch let failure as CurlFailure {
            if failure.code == CURLE_ABORTED_BY_CALLBACK, cancellation.isCancelled { throw CancellationError() }
            throw error(for: failure)
        }
        guard !requireHTTP2 || curl.httpVersion == CURL_HTTP_VERSION_2_0 else {
            throw DeliveryError(.pushFailed, statusCode: curl.responseCode, detail: "the provider did not answer over HTTP/2")
        }
        return Response(status: curl.responseCode, body: context.response)
    }

    /// The error for a provider's answer, nil for 2xx.
    public static func error(forStatus status: Int, provider: Provider, body: [UInt8]) -> DeliveryError? {
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        switch status {
        case 200..<300: return nil
        case 410 where provider == .apns: return DeliveryError(.pushTokenGone, statusCode: status)
        case 400 where provider == .apns && text.contains("BadDeviceToken"): return DeliveryError(.pushTokenGone, statusCode: status)
        case 404 where provider == .fcm, 400 where provider == .fcm && text.contains("UNREGISTERED"):
            return DeliveryError(.pushTokenGone, statusCode: status)
        case 401, 403: return DeliveryError(.pushUnauthorized, statusCode: status)
        case 429: return DeliveryError(.pushThrottled, statusCode: status)
        case 400..<500: return DeliveryError(.pushRejected, statusCode: status)
        case 500..<600: return DeliveryError(.pushUnavailable, statusCode: status)
        default: return DeliveryError(.pushFailed, statusCode: status)
        }
    }

    static func error(for failure: CurlFailure) -> DeliveryError {
        switch failure.code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            DeliveryError(.pushConnectFailed, detail: failure.text)
        case CURLE_OPERATION_TIMEDOUT:
            DeliveryError(.pushTimeout, detail: failure.text)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            DeliveryError(.pushConnectionLost, detail: failure.text)
        default:
            DeliveryError(.pushFailed, detail: failure.text)
        }
    }
}
