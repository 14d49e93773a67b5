import CCurl
import FoundationEssentials

/// Submits ``EmailMessage``s to an SMTP server through libcurl.
///
/// Each send opens its own connection: EHLO, optional STARTTLS and AUTH, `MAIL FROM` with the
/// sender, one `RCPT TO` per recipient, and `DATA` with the rendered message fed to libcurl by
/// a read callback. The transfer is a blocking libcurl call, so it runs on one of the client's
/// dispatch queues (see ``Configuration-swift.struct/maximumConcurrentSends``) and the caller
/// awaits it through a checked continuation; the cooperative pool never blocks.
///
/// Failures are ``DeliveryError``s with stable codes: `smtp_connect_failed`, `smtp_timeout`,
/// `smtp_tls_failed`, `smtp_auth_failed`, `smtp_rejected` (5xx), `smtp_deferred` (4xx),
/// `smtp_connection_lost`, `smtp_failed`. Their descriptions carry the code and the reply code,
/// never an address or the message. Cancelling the awaiting task aborts the transfer within
/// about a second and throws `CancellationError`.
///
/// ```swift
/// let smtp = try SMTPClient(configuration: .init(url: "smtp://127.0.0.1:2525"))
/// let receipt = try await smtp.send(message)
/// ```
public final class SMTPClient: Sendable {
    /// What a successful send returns.
    public struct Receipt: Sendable, Hashable {
        /// The `Message-ID` the message was sent with, `<…@sender-domain>`.
        public let messageID: String
        /// The server's last reply code, 250 after an accepted `DATA`.
        public let replyCode: Int
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let lanes: BlockingLanes

    /// A client for one SMTP server.
    ///
    /// - Parameter configuration: The server and options.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/invalidConfiguration``
    ///   when the configuration is unusable.
    public init(configuration: Configuration) throws {
        try configuration.validate()
        self.configuration = configuration
        lanes = BlockingLanes(label: "signet.delivery.smtp", count: configuration.maximumConcurrentSends)
    }

    /// Renders and sends a message.
    ///
    /// - Parameters:
    ///   - message: The message; its sender and recipients are the SMTP envelope.
    ///   - date: The `Date` header's time; now by default.
    /// - Returns: The Message-ID used and the server's final reply code.
    /// - Throws: ``DeliveryError`` (see the type's discussion; ``DeliveryError/isTransient``
    ///   says whether a retry may help), or `CancellationError` when the task is cancelled.
    @discardableResult
    public func send(_ message: EmailMessage, date: Date = Date()) async throws -> Receipt {
        let messageID = EmailMessage.makeMessageID(domain: message.from.domain)
        let rendered = Array(try message.render(date: date, messageID: messageID).utf8)
        let configuration = configuration
        let sender = message.from.envelopeValue
        let recipients = message.to.map(\.envelopeValue)
        // Blocking libcurl call: runs on a lane, awaited through a checked continuation.
        let replyCode = try await lanes.run { cancellation in
            try Self.perform(configuration, sender: sender, recipients: recipients, data: rendered, cancellation: cancellation)
        }
        return Receipt(messageID: messageID, replyCode: replyCode)
    }

    // MARK: - Transfer (on a lane)

    /// Configures a handle for one SMTP submission and runs it; returns the final reply code.
    private static func perform(
        _ configuration: Configuration, sender: String, recipients: [String], data: [UInt8],
        cancellation: CancellationFlag
    ) throws -> Int {
        let context = CurlTransferContext(upload: data, cancellation: cancellation)
        let curl: CurlEasy
        do {
            curl = try CurlEasy()
            try curl.set(CURLOPT_URL, configuration.url)
            try curl.set(CURLOPT_PROTOCOLS_STR, "smtp,smtps")
            try curl.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
            try curl.set(CURLOPT_TIMEOUT_MS, configuration.timeout.curlMilliseconds)
            if configuration.requireSTARTTLS {
                try curl.set(CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))
            }
            if let caBundlePath = configuration.caBundlePath {
                try curl.set(CURLOPT_CAINFO, caBundlePath)
            }
            if let username = configuration.username {
                try curl.set(CURLOPT_USERNAME, username)
                try curl.set(CURLOPT_PASSWORD, configuration.password ?? "")
            }
            try curl.set(CURLOPT_MAIL_FROM, sender)
            try curl.set(CURLOPT_MAIL_RCPT, list: recipients)
            try curl.set(CURLOPT_UPLOAD, 1)
            try curl.set(CURLOPT_INFILESIZE, data.count)
            try curl.install(context)
        } catch let failure as CurlFailure {
            throw DeliveryError(.smtpFailed, detail: failure.text)
        }
        do {
            try withExtendedLifetime(context) { try curl.perform() }
        } catch let failure as CurlFailure {
            if failure.code == CURLE_ABORTED_BY_CALLBACK, cancellation.isCancelled {
                throw CancellationError()
            }
            throw error(for: failure, replyCode: curl.responseCode)
        }
        return curl.responseCode
    }

    /// The ``DeliveryError`` for a failed transfer, decided first by the server's reply code
    /// (libcurl reports a refused `MAIL FROM`, `RCPT TO` or `DATA` as a send error or a
    /// weird reply, so only the reply says it was a refusal), then by the libcurl code.
    static func error(for failure: CurlFailure, replyCode: Int) -> DeliveryError {
        let status = replyCode > 0 ? replyCode : nil
        if failure.code == CURLE_LOGIN_DENIED || replyCode == 530 || replyCode == 535 {
            return DeliveryError(.smtpAuthFailed, statusCode: status, detail: failure.text)
        }
        switch failure.code {
        case CURLE_OPERATION_TIMEDOUT:
            return DeliveryError(.smtpTimeout, statusCode: status, detail: failure.text)
        case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND:
            return DeliveryError(.smtpTLSFailed, statusCode: status, detail: failure.text)
        default:
            break
        }
        switch replyCode {
        case 500..<600:
            return DeliveryError(.smtpRejected, statusCode: replyCode, detail: failure.text)
        case 400..<500:
            return DeliveryError(.smtpDeferred, statusCode: replyCode, detail: failure.text)
        default:
            break
        }
        switch failure.code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            return DeliveryError(.smtpConnectFailed, statusCode: status, detail: failure.text)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE:
            return DeliveryError(.smtpConnectionLost, statusCode: status, detail: failure.text)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN:
            return DeliveryError(.invalidConfiguration, statusCode: status, detail: failure.text)
        default:
            return DeliveryError(.smtpFailed, statusCode: status, detail: failure.text)
        }
    }
}
