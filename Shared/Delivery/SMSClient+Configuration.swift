extension SMSClient {
    /// How an ``SMSClient`` authenticates to the gateway. `description` never shows the secret.
    public enum Authorization: Sendable, Hashable, CustomStringConvertible {
        /// No `Authorization` header.
        case none
        /// `Authorization: Bearer <token>`.
        case bearer(token: String)
        /// `Authorization: Basic base64(username:password)` (RFC 7617).
        case basic(username: String, password: String)

        /// The header line to send, if any.
        var headerLine: String? {
            switch self {
            case .none:
                return nil
            case .bearer(let token):
                return "Authorization: Bearer \(token)"
            case .basic(let username, let password):
                return "Authorization: Basic \(MIMEEncoding.base64(Array("\(username):\(password)".utf8)))"
            }
        }

        /// `none`, `bearer(<redacted>)` or `basic(<redacted>)`.
        public var description: String {
            switch self {
            case .none: "none"
            case .bearer: "bearer(<redacted>)"
            case .basic: "basic(<redacted>)"
            }
        }
    }

    /// Where and how an ``SMSClient`` posts messages.
    ///
    /// `description` shows the URL and the options but never a credential.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// The gateway endpoint, `http://` or `https://`, e.g. `https://sms.example/messages`.
        public var url: String
        /// The `Authorization` header to send.
        public var authorization: Authorization
        /// The sender used for messages that name none; no `sender` member when nil too.
        public var defaultSender: String?
        /// A PEM bundle of CA certificates to trust instead of the system's (CURLOPT_CAINFO).
        public var caBundlePath: String?
        /// The longest a connection (TCP and TLS) may take.
        public var connectTimeout: Duration
        /// The longest a whole request may take, connection included.
        public var timeout: Duration
        /// How many requests may block at once, each on its own serial queue.
        public var maximumConcurrentSends: Int

        /// A configuration.
        ///
        /// - Parameters:
        ///   - url: The gateway endpoint.
        ///   - authorization: How to authenticate; none by default.
        ///   - defaultSender: The sender for messages without one.
        ///   - caBundlePath: CA certificates to trust instead of the system's.
        ///   - connectTimeout: Connection limit; 5 s by default.
        ///   - timeout: Limit for a whole request; 15 s by default.
        ///   - maximumConcurrentSends: Blocking requests at once; 4 by default.
        public init(
            url: String, authorization: Authorization = .none, defaultSender: String? = nil,
            caBundlePath: String? = nil, connectTimeout: Duration = .seconds(5), timeout: Duration = .seconds(15),
            maximumConcurrentSends: Int = 4
        ) {
            self.url = url
            self.authorization = authorization
            self.defaultSender = defaultSender
            self.caBundlePath = caBundlePath
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.maximumConcurrentSends = maximumConcurrentSends
        }

        /// The URL, the authorization kind and the limits; no credential.
        public var description: String {
            "SMSClient.Configuration(url: \(url), authorization: \(authorization), connectTimeout: \(connectTimeout), "
                + "timeout: \(timeout), maximumConcurrentSends: \(maximumConcurrentSends))"
        }

        /// Checks what libcurl would only report at the first request.
        ///
        /// - Throws: ``DeliveryError`` with code
        ///   ``DeliveryError/Code-swift.struct/invalidConfiguration`` for another scheme, a
        ///   line break in a credential (it would split the header), a bad default sender, a
        ///   non-positive timeout or fewer than one concurrent send.
        func validate() throws {
            let lowered = url.lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
                throw DeliveryError(.invalidConfiguration, detail: "SMS URL scheme must be http or https")
            }
            var fields = [url, caBundlePath ?? ""]
            switch authorization {
            case .none: break
            case .bearer(let token): fields.append(token)
            case .basic(let username, let password): fields += [username, password]
            }
            for field in fields where HeaderText.containsLineBreak(field) {
                throw DeliveryError(.invalidConfiguration, detail: "line break in an SMS setting")
            }
            if let defaultSender, !SMSMessage.isUsableSender(defaultSender) {
                throw DeliveryError(.invalidConfiguration, detail: "default sender is not 1-20 printable characters")
            }
            guard connectTimeout > .zero, timeout > .zero else {
                throw DeliveryError(.invalidConfiguration, detail: "SMS timeouts must be positive")
            }
            guard maximumConcurrentSends >= 1 else {
                throw DeliveryError(.invalidConfiguration, detail: "maximumConcurrentSends must be at least 1")
            }
        }
    }
}
