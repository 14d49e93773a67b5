import Platform

/// Why a message could not be built, rendered or delivered: a stable ``code``, whether trying
/// again may help (``isTransient``), and for protocol failures the server's ``statusCode``.
///
/// ``description`` carries only the code and the status: never an address, a phone number, a
/// message body, a one-time code or a credential. The transport's own words (libcurl's error
/// text, which may quote a server reply naming the recipient) go to ``debugDescription``
/// only, for a developer's eyes.
public struct DeliveryError: CodedError {
    /// A stable error code, `rawValue` in snake_case (`smtp_rejected`).
    ///
    /// A struct over a private enum so that codes can be added without breaking callers that
    /// compare with the ones they care about.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidAddress = "invalid_address"
            case headerInjection = "header_injection"
            case invalidMessage = "invalid_message"
            case invalidConfiguration = "invalid_configuration"
            case smtpConnectFailed = "smtp_connect_failed"
            case smtpTimeout = "smtp_timeout"
            case smtpTLSFailed = "smtp_tls_failed"
            case smtpAuthFailed = "smtp_auth_failed"
            case smtpRejected = "smtp_rejected"
            case smtpDeferred = "smtp_deferred"
            case smtpConnectionLost = "smtp_connection_lost"
            case smtpFailed = "smtp_failed"
            case smsConnectFailed = "sms_connect_failed"
            case smsTimeout = "sms_timeout"
            case smsConnectionLost = "sms_connection_lost"
            case smsRejected = "sms_rejected"
            case smsThrottled = "sms_throttled"
            case smsUnavailable = "sms_unavailable"
            case smsFailed = "sms_failed"
            case pushConnectFailed = "push_connect_failed"
            case pushTimeout = "push_timeout"
            case pushConnectionLost = "push_connection_lost"
            case pushRejected = "push_rejected"
            case pushUnauthorized = "push_unauthorized"
            case pushTokenGone = "push_token_gone"
            case pushThrottled = "push_throttled"
            case pushUnavailable = "push_unavailable"
            case pushFailed = "push_failed"
            case templateNotFound = "template_not_found"
            case templateInvalid = "template_invalid"
            case templateValueMissing = "template_value_missing"
        }

        private let base: Base

        // MARK: - Building messages

        /// An address is not a plain `local@domain` of printable ASCII, or a phone number is
        /// not E.164 (`+` and 7–15 digits).
        public static let invalidAddress = Code(base: .invalidAddress)
        /// A header value, display name or address contains CR, LF or NUL: refused, since it
        /// would let the value start a header of its own (RFC 5322 §2.2).
        public static let headerInjection = Code(base: .headerInjection)
        /// A message is unusable as a whole: no recipient, an empty SMS text, a Message-ID
        /// that is not `<left@right>`.
        public static let invalidMessage = Code(base: .invalidMessage)
        /// A client configuration is unusable: a URL scheme other than the ones the client
        /// speaks, a non-positive timeout.
        public static let invalidConfiguration = Code(base: .invalidConfiguration)

        // MARK: - SMTP

        /// The SMTP server could not be reached (name resolution, connection refused).
        public static let smtpConnectFailed = Code(base: .smtpConnectFailed)
        /// The connection or the whole exchange took longer than configured.
        public static let smtpTimeout = Code(base: .smtpTimeout)
        /// TLS could not be established: STARTTLS required but not offered, handshake or
        /// certificate failure.
        public static let smtpTLSFailed = Code(base: .smtpTLSFailed)
        /// The server refused the credentials (535) or offered no usable mechanism.
        public static let smtpAuthFailed = Code(base: .smtpAuthFailed)
        /// The server answered a 5xx reply to MAIL FROM, RCPT TO or DATA: permanent.
        public static let smtpRejected = Code(base: .smtpRejected)
        /// The server answered a 4xx reply (greylisting, mailbox busy, too many connections).
        public static let smtpDeferred = Code(base: .smtpDeferred)
        /// The connection broke during the exchange.
        public static let smtpConnectionLost = Code(base: .smtpConnectionLost)
        /// Any other libcurl failure (see ``DeliveryError/debugDescription``).
        public static let smtpFailed = Code(base: .smtpFailed)

        // MARK: - SMS

        /// The SMS gateway could not be reached.
        public static let smsConnectFailed = Code(base: .smsConnectFailed)
        /// The connection or the whole request took longer than configured.
        public static let smsTimeout = Code(base: .smsTimeout)
        /// The connection broke before a response came; the gateway may or may not have taken
        /// the message, so a retry can duplicate it (acceptable for a one-time code).
        public static let smsConnectionLost = Code(base: .smsConnectionLost)
        /// The gateway answered 4xx (other than 408 and 429): the request itself is wrong, so
        /// sending it again cannot help.
        public static let smsRejected = Code(base: .smsRejected)
        /// The gateway answered 408 or 429: it asks for the request later.
        public static let smsThrottled = Code(base: .smsThrottled)
        /// The gateway answered 5xx.
        public static let smsUnavailable = Code(base: .smsUnavailable)
        /// Any other failure: a status outside 2xx–5xx, or another libcurl error.
        public static let smsFailed = Code(base: .smsFailed)

        // MARK: - Push (APNs, FCM)

        /// The push provider could not be reached (refused, unresolved).
        public static let pushConnectFailed = Code(base: .pushConnectFailed)
        /// The push provider did not answer in time.
        public static let pushTimeout = Code(base: .pushTimeout)
        /// The connection broke before a complete answer.
        public static let pushConnectionLost = Code(base: .pushConnectionLost)
        /// The provider refused the request (400: a bad payload, topic or token format);
        /// sending it again cannot help.
        public static let pushRejected = Code(base: .pushRejected)
        /// The provider refused the credentials (403, 401); not retried: the configuration
        /// (or the provider token) is wrong.
        public static let pushUnauthorized = Code(base: .pushUnauthorized)
        /// The device token is no longer valid (APNs 410 Unregistered, FCM 404 UNREGISTERED):
        /// the token must be marked invalid and never used again.
        public static let pushTokenGone = Code(base: .pushTokenGone)
        /// The provider answered 429.
        public static let pushThrottled = Code(base: .pushThrottled)
        /// The provider answered 5xx.
        public static let pushUnavailable = Code(base: .pushUnavailable)
        /// Any other failure.
        public static let pushFailed = Code(base: .pushFailed)

        // MARK: - Templates

        /// No template for the kind in any locale of the fallback chain, for the tenant, the
        /// deployment or the built-in defaults.
        public static let templateNotFound = Code(base: .templateNotFound)
        /// A template has an unclosed `{{`, or a placeholder that is not one of
        /// ``TemplatePlaceholder``'s.
        public static let templateInvalid = Code(base: .templateInvalid)
        /// A template uses a placeholder for which no value was given.
        public static let templateValueMissing = Code(base: .templateValueMissing)

        /// The stable snake_case name, e.g. `smtp_rejected`.
        public var rawValue: String { base.rawValue }
        /// The same as ``rawValue``.
        public var description: String { base.rawValue }

        /// Whether failures of this kind may succeed when tried again later. A code decides
        /// it alone: ``DeliveryError/isTransient`` forwards here.
        public var isTransient: Bool {
            switch base {
            case .smtpConnectFailed, .smtpTimeout, .smtpDeferred, .smtpConnectionLost,
                .smsConnectFailed, .smsTimeout, .smsConnectionLost, .smsThrottled, .smsUnavailable,
                .pushConnectFailed, .pushTimeout, .pushConnectionLost, .pushThrottled, .pushUnavailable:
                true
            case .invalidAddress, .headerInjection, .invalidMessage, .invalidConfiguration,
                .smtpTLSFailed, .smtpAuthFailed, .smtpRejected, .smtpFailed,
                .smsRejected, .smsFailed,
                .pushRejected, .pushUnauthorized, .pushTokenGone, .pushFailed,
                .templateNotFound, .templateInvalid, .templateValueMissing:
                false
            }
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The protocol status that decided the code, when there was one: the SMTP reply code
    /// (`550`) or the HTTP status (`503`).
    public let statusCode: Int?
    /// Detail for developers only: libcurl's error text, the offending field's name. Shown by
    /// ``debugDescription``, never by ``description``.
    public let detail: String
    public let file: String
    public let line: Int

    /// An error with a code, an optional protocol status and a detail for developers.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - statusCode: The SMTP reply code or HTTP status, if any.
    ///   - detail: Developer detail, kept out of ``description``. Must not be a message body
    ///     or a secret.
    init(_ code: Code, statusCode: Int? = nil, detail: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.statusCode = statusCode
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// Whether trying again later may succeed: connection failures, timeouts, 4xx SMTP
    /// replies, HTTP 5xx, 408 and 429.
    public var isTransient: Bool { code.isTransient }

    /// The code and the status, e.g. `smtp_rejected (status 550)`. Safe to log.
    public var description: String {
        if let statusCode { "\(code) (status \(statusCode))" } else { code.description }
    }

    /// The description, the developer detail and the place that raised the error.
    ///
    /// - Important: The detail may quote a server reply, which can name a recipient: log it
    ///   at debug level only, where personal data is allowed.
    public var debugDescription: String {
        let suffix = detail.isEmpty ? "" : ": \(detail)"
        return "DeliveryError(\(description)\(suffix), raised at \(file):\(line))"
    }

    /// Errors are equal when code and status are; detail and place do not count.
    public static func == (lhs: DeliveryError, rhs: DeliveryError) -> Bool {
        lhs.code == rhs.code && lhs.statusCode == rhs.statusCode
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(statusCode)
    }
}
