extension SMTPClient {
    /// Where and how an ``SMTPClient`` submits mail.
    ///
    /// `description` shows the URL and the options but never the password.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// `smtp://host:port` (plain, optionally upgraded with STARTTLS) or `smtps://host:port`
        /// (TLS from the first byte). A path, as in `smtp://mx.example:25/signet.example`,
        /// is the name sent in EHLO (libcurl's rule); without one libcurl sends the local
        /// host name.
        public var url: String
        /// Require STARTTLS on an `smtp://` URL (CURLOPT_USE_SSL = CURLUSESSL_ALL): a server
        /// that does not offer it fails the send with
        /// ``DeliveryError/Code-swift.struct/smtpTLSFailed`` before any credential or
        /// message is sent.
        public var requireSTARTTLS: Bool
        /// The user name for SMTP AUTH; no AUTH when nil.
        public var username: String?
        /// The password for SMTP AUTH.
        public var password: String?
        /// A PEM bundle of CA certificates to trust instead of the system's (CURLOPT_CAINFO).
        public var caBundlePath: String?
        /// The longest a connection (TCP and TLS) may take.
        public var connectTimeout: Duration
        /// The longest a whole send may take, connection included.
        public var timeout: Duration
        /// How many sends may block at once, each on its own serial queue.
        public var maximumConcurrentSends: Int

        /// A configuration.
        ///
        /// - Parameters:
        ///   - url: `smtp://host:port` or `smtps://host:port`.
        ///   - requireSTARTTLS: Refuse to send unless the server upgrades to TLS.
        ///   - username: The AUTH user name, if any.
        ///   - password: The AUTH password, if any.
        ///   - caBundlePath: CA certificates to trust instead of the system's.
        ///   - connectTimeout: Connection limit; 10 s by default.
        ///   - timeout: Limit for a whole send; 30 s by default.
        ///   - maximumConcurrentSends: Blocking sends at once; 4 by default.
        public init(
            url: String, requireSTARTTLS: Bool = false, username: String? = nil, password: String? = nil,
            caBundlePath: String? = nil, connectTimeout: Duration = .seconds(10), timeout: Duration = .seconds(30),
            maximumConcurrentSends: Int = 4
        ) {
            self.url = url
            self.requireSTARTTLS = requireSTARTTLS
            self.username = username
            self.password = password
            self.caBundlePath = caBundlePath
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.maximumConcurrentSends = maximumConcurrentSends
        }

        /// The URL, the TLS and AUTH choices and the limits; the password shows as `<redacted>`.
        public var description: String {
            let auth = username == nil ? "none" : "user, password \(password == nil ? "none" : "<redacted>")"
            return "SMTPClient.Configuration(url: \(url), requireSTARTTLS: \(requireSTARTTLS), auth: \(auth), "
                + "connectTimeout: \(connectTimeout), timeout: \(timeout), maximumConcurrentSends: \(maximumConcurrentSends))"
        }

        /// Checks what libcurl would only report at the first send.
        ///
        /// - Throws: ``DeliveryError`` with code
        ///   ``DeliveryError/Code-swift.struct/invalidConfiguration`` for another scheme, a
        ///   line break in a field, a non-positive timeout or fewer than one concurrent send.
        func validate() throws {
            let lowered = url.lowercased()
            guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://") else {
                throw DeliveryError(.invalidConfiguration, detail: "SMTP URL scheme must be smtp or smtps")
            }
            for field in [url, username ?? "", password ?? "", caBundlePath ?? ""] where HeaderText.containsLineBreak(field) {
                throw DeliveryError(.invalidConfiguration, detail: "line break in an SMTP setting")
            }
            guard connectTimeout > .zero, timeout > .zero else {
                throw DeliveryError(.invalidConfiguration, detail: "SMTP timeouts must be positive")
            }
            guard maximumConcurrentSends >= 1 else {
                throw DeliveryError(.invalidConfiguration, detail: "maximumConcurrentSends must be at least 1")
            }
        }
    }
}
