import CCurl

/// Posts ``SMSMessage``s to an HTTP SMS gateway through libcurl.
///
/// Each send is one `POST` of `{"to": "+…", "text": "…", "sender": "…"}` with
/// `Content-Type: application/json` and the configured `Authorization` header. Any 2xx means
/// the gateway took the message. Otherwise a ``DeliveryError``:
///
/// | outcome | code | transient |
/// | --- | --- | --- |
/// | 4xx (but 408, 429) | `sms_rejected` | no: the request itself is wrong |
/// | 408, 429 | `sms_throttled` | yes |
/// | 5xx | `sms_unavailable` | yes |
/// | connection refused, unresolved host | `sms_connect_failed` | yes |
/// | timeout | `sms_timeout` | yes |
/// | connection broken before a response | `sms_connection_lost` | yes |
/// | anything else | `sms_failed` | no |
///
/// The request is a blocking libcurl call, so it runs on one of the client's dispatch queues
/// and the caller awaits it through a checked continuation; the cooperative pool never blocks.
/// Cancelling the awaiting task aborts the request and throws `CancellationError`.
public final class SMSClient: Sendable {
    /// What a gateway that took the message answered.
    public struct Receipt: Sendable, Hashable {
        /// The HTTP status, 200–299.
        public let statusCode: Int
        /// The response body, at most ``SMSClient/responseLimit`` bytes; gateways put their
        /// message id here.
        public let body: [UInt8]
    }

    /// Bytes of a response body kept in a ``Receipt``.
    public static let responseLimit = 4096

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let lanes: BlockingLanes

    /// A client for one gateway.
    ///
    /// - Parameter configuration: The endpoint and options.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/invalidConfiguration``
    ///   when the configuration is unusable.
    public init(configuration: Configuration) throws {
        try configuration.validate()
        self.configuration = configuration
        lanes = BlockingLanes(label: "signet.delivery.sms", count: configuration.maximumConcurrentSends)
    }

    /// Posts a message to the gateway.
    ///
    /// - Parameter message: The message; the configured default sender fills in a missing one.
    /// - Returns: The status and response body of an accepted request.
    /// - Throws: ``DeliveryError`` (see the type's table), or `CancellationError` when the
    ///   task is cancelled.
    @discardableResult
    public func send(_ message: SMSMessage) async throws -> Receipt {
        let body = Array(message.jsonBody(defaultSender: configuration.defaultSender).utf8)
        let configuration = configuration
        // Blocking libcurl call: runs on a lane, awaited through a checked continuation.
        return try await lanes.run { cancellation in
            try Self.perform(configuration, body: body, cancellation: cancellation)
        }
    }

    // MARK: - Transfer (on a lane)

    /// Configures a handle for one POST, runs it and classifies the outcome.
    private static func perform(_ configuration: Configuration, body: [UInt8], cancellation: CancellationFlag) throws -> Receipt {
        let context = CurlTransferContext(responseLimit: responseLimit, cancellation: cancellation)
        var headers = ["Content-Type: application/json; charset=utf-8", "Accept: application/json", "Expect:"]
        if let authorization = configuration.authorization.headerLine { headers.append(authorization) }
        let curl: CurlEasy
        do {
            curl = try CurlEasy()
            try curl.set(CURLOPT_URL, configuration.url)
            try curl.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try curl.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
            try curl.set(CURLOPT_TIMEOUT_MS, configuration.timeout.curlMilliseconds)
            if let caBundlePath = configuration.caBundlePath {
                try curl.set(CURLOPT_CAINFO, caBundlePath)
            }
            try curl.set(CURLOPT_HTTPHEADER, list: headers)
            try curl.set(CURLOPT_POST, 1)
            // POSTFIELDSIZE first: COPYPOSTFIELDS copies that many bytes.
            try curl.set(CURLOPT_POSTFIELDSIZE, body.count)
            try body.withUnsafeBytes { bytes in
                try curl.set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            try curl.install(context)
        } catch let failure as CurlFailure {
            throw DeliveryError(.smsFailed, detail: failure.text)
        }
        do {
            try withExtendedLifetime(context) { try curl.perform() }
        } catch let failure as CurlFailure {
            if failure.code == CURLE_ABORTED_BY_CALLBACK, cancellation.isCancelled {
                throw CancellationError()
            }
            throw error(for: failure)
        }
        let status = curl.responseCode
        if let error = error(forStatus: status) { throw error }
        return Receipt(statusCode: status, body: context.response)
    }

    /// The error for an HTTP status, nil for 2xx.
    static func error(forStatus status: Int) -> DeliveryError? {
        switch status {
        case 200..<300: nil
        case 408, 429: DeliveryError(.smsThrottled, statusCode: status)
        case 400..<500: DeliveryError(.smsRejected, statusCode: status)
        case 500..<600: DeliveryError(.smsUnavailable, statusCode: status)
        default: DeliveryError(.smsFailed, statusCode: status)
        }
    }

    /// The error for a transfer that got no complete response.
    static func error(for failure: CurlFailure) -> DeliveryError {
        switch failure.code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            DeliveryError(.smsConnectFailed, detail: failure.text)
        case CURLE_OPERATION_TIMEDOUT:
            DeliveryError(.smsTimeout, detail: failure.text)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE:
            DeliveryError(.smsConnectionLost, detail: failure.text)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN:
            DeliveryError(.invalidConfiguration, detail: failure.text)
        default:
            DeliveryError(.smsFailed, detail: failure.text)
        }
    }
}
