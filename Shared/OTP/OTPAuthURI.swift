import Platform

/// An `otpauth://` URI in the Key Uri Format that Google Authenticator introduced and other
/// authenticator apps follow: what the enrolment QR code carries.
///
/// ```text
/// otpauth://totp/ACME%20Co:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30
/// ```
///
/// Building percent-encodes the issuer and the account separately, so the `:` between them is
/// the only literal colon of the label, and encodes every parameter value; everything but
/// RFC 3986 unreserved characters (`A–Z a–z 0–9 - . _ ~`) is written as `%XX` of its UTF-8
/// bytes (a space is `%20`, never `+`). Parsing accepts what this type writes and the common
/// variants of other issuers: a `%3A` colon in the label, spaces after it, `+` for a space in
/// parameter values, lower-case type, algorithm and hex digits, padded secrets, unknown
/// parameters (ignored).
///
/// - Important: The URI contains the secret. The type deliberately has no `description`;
///   never log ``absoluteString``.
public struct OTPAuthURI: Sendable, Hashable {
    /// Whether the credential is time- or counter-based, with the parameter that goes with it.
    public enum Kind: Sendable, Hashable {
        /// TOTP (RFC 6238) with its period in seconds.
        case totp(period: Int)
        /// HOTP (RFC 4226) with the counter the authenticator starts from.
        case hotp(counter: UInt64)
    }

    /// TOTP or HOTP.
    public let kind: Kind
    /// The provider the account belongs to, shown by the app above the account; `nil` only
    /// for a parsed URI that names none.
    public let issuer: String?
    /// The account, e.g. a user name or e-mail address.
    public let account: String
    /// The shared secret.
    public let secret: OTPSecret
    /// The HMAC hash function.
    public let algorithm: OTPAlgorithm
    /// The code length.
    public let digits: Int

    /// The longest issuer or account accepted, in UTF-8 bytes: enough for any real name and
    /// short enough that the URI fits a QR code that phones scan easily.
    public static let maximumNameByteCount = 256

    /// The longest URI ``init(parsing:)`` accepts, in UTF-8 bytes.
    public static let maximumLength = 4096

    // MARK: - Building

    /// A URI for the given credential parameters.
    ///
    /// - Parameters:
    ///   - issuer: The provider, e.g. `"ACME Co"`; non-empty, no colon, no leading or trailing
    ///     white space, at most ``maximumNameByteCount`` bytes. `nil` leaves it out, which the
    ///     Key Uri Format discourages.
    ///   - account: The account name, with the same rules as `issuer`.
    ///   - secret: The shared secret.
    ///   - algorithm: The HMAC hash function.
    ///   - digits: The code length, within ``HOTP/digitRange``.
    ///   - kind: TOTP with its period, or HOTP with its initial counter.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for a
    ///   name that breaks the rules above, or `digits` or the period out of range.
    public init(
        issuer: String?, account: String, secret: OTPSecret, algorithm: OTPAlgorithm = .sha1,
        digits: Int = 6, kind: Kind = .totp(period: TOTP.defaultPeriod)
    ) throws {
        if let issuer { try Self.checkName(issuer, "issuer") }
        try Self.checkName(account, "account")
        guard HOTP.digitRange.contains(digits) else { throw OTPError.invalidDigits(digits) }
        if case .totp(let period) = kind, !TOTP.periodRange.contains(period) {
            throw OTPError(.invalidParameter, "period \(period) outside \(TOTP.periodRange.lowerBound)...\(TOTP.periodRange.upperBound)")
        }
        self.kind = kind
        self.issuer = issuer
        self.account = account
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
    }

    /// A URI for a TOTP credential.
    ///
    /// - Parameters:
    ///   - totp: The credential: secret, algorithm, digits and period.
    ///   - issuer: The provider, as for ``init(issuer:account:secret:algorithm:digits:kind:)``.
    ///   - account: The account name.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for an
    ///   invalid issuer or account.
    public init(totp: TOTP, issuer: String, account: String) throws {
        try self.init(
            issuer: issuer, account: account, secret: totp.secret, algorithm: totp.algorithm,
            digits: totp.digits, kind: .totp(period: totp.period))
    }

    /// The URI text, parameters in the order `secret`, `issuer`, `algorithm`, `digits`, then
    /// `period` or `counter`.
    public var absoluteString: String {
        var label = Self.percentEncode(account)
        if let issuer { label = Self.percentEncode(issuer) + ":" + label }
        var query = "secret=" + secret.base32
        if let issuer { query += "&issuer=" + Self.percentEncode(issuer) }
        query += "&algorithm=\(algorithm.uriName)&digits=\(digits)"
        switch kind {
        case .totp(let period): return "otpauth://totp/\(label)?\(query)&period=\(period)"
        case .hotp(let counter): return "otpauth://hotp/\(label)?\(query)&counter=\(counter)"
        }
    }

    /// The TOTP generator and verifier for this URI's credential.
    ///
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for an
    ///   HOTP URI.
    public func makeTOTP() throws -> TOTP {
        guard case .totp(let period) = kind else { throw OTPError(.invalidParameter, "not a TOTP URI") }
        return try TOTP(secret: secret, algorithm: algorithm, digits: digits, period: period)
    }

    // MARK: - Parsing

    /// The credential that an otpauth URI describes.
    ///
    /// - Parameter text: An `otpauth://totp/…` or `otpauth://hotp/…` URI.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidURI`` for text that
    ///   is not an otpauth URI, a bad percent escape, a missing or repeated parameter, an
    ///   unknown algorithm, a non-numeric number, or an issuer parameter that contradicts the
    ///   label; ``OTPError/Code-swift.struct/invalidBase32`` or
    ///   ``OTPError/Code-swift.struct/invalidSecret`` for the secret; and
    ///   ``OTPError/Code-swift.struct/invalidParameter`` as the memberwise initialiser.
    public init(parsing text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumLength else { throw OTPError(.invalidURI, "longer than \(Self.maximumLength) bytes") }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "#") }) else {
            throw OTPError(.invalidURI, "control character or fragment")
        }
        let scheme = Array("otpauth://".utf8)
        guard bytes.count > scheme.count, Self.lowercased(bytes.prefix(scheme.count)) == scheme else {
            throw OTPError(.invalidURI, "scheme is not otpauth")
        }
        let rest = bytes.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { throw OTPError(.invalidURI, "no label") }
        let type = Self.lowercased(rest[..<slash])
        let afterType = rest[(slash + 1)...]
        let question = afterType.firstIndex(of: UInt8(ascii: "?"))
        let rawLabel = afterType[..<(question ?? afterType.endIndex)]
        let rawQuery = question.map { afterType[($0 + 1)...] } ?? []

        // Label: `issuer:account` or `account`; the colon may be escaped as %3A (Key Uri Format).
        let label = try Self.percentDecode(rawLabel, plusIsSpace: false)
        var labelIssuer: String?
        var account = label
        if let colon = label.firstIndex(of: ":") {
            labelIssuer = String(label[..<colon])
            account = String(label[label.index(after: colon)...].drop(while: { $0 == " " }))
        }

        let parameters = try Self.parseQuery(rawQuery)
        guard let secretText = parameters["secret"] else { throw OTPError(.invalidURI, "no secret parameter") }
        let secret = try OTPSecret(base32: secretText)
        if let labelIssuer, let parameterIssuer = parameters["issuer"], labelIssuer != parameterIssuer {
            throw OTPError(.invalidURI, "issuer parameter differs from the label's issuer")
        }
        let algorithm = try parameters["algorithm"].map {
            guard let algorithm = OTPAlgorithm(uriName: $0) else { throw OTPError(.invalidURI, "unknown algorithm") }
            return algorithm
        } ?? .sha1
        let digits = try parameters["digits"].map { try Self.number($0, "digits", as: Int.self) } ?? 6

        let kind: Kind
        switch type {
        case Array("totp".utf8):
            let period = try parameters["period"].map { try Self.number($0, "period", as: Int.self) }
            kind = .totp(period: period ?? TOTP.defaultPeriod)
        case Array("hotp".utf8):
            guard let counter = parameters["counter"] else { throw OTPError(.invalidURI, "hotp without counter") }
            kind = .hotp(counter: try Self.number(counter, "counter", as: UInt64.self))
        default:
            throw OTPError(.invalidURI, "type is neither totp nor hotp")
        }
        try self.init(
            issuer: parameters["issuer"] ?? labelIssuer, account: account, secret: secret,
            algorithm: algorithm, digits: digits, kind: kind)
    }

    /// The `name=value` pairs of a query, decoded; refuses a pair without `=` and a repeated
    /// name.
    private static func parseQuery(_ query: ArraySlice<UInt8>) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else {
                throw OTPError(.invalidURI, "parameter without a value")
            }
            let name = try percentDecode(pair[..<equals], plusIsSpace: true)
            let value = try percentDecode(pair[(equals + 1)...], plusIsSpace: true)
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw OTPError(.invalidURI, "repeated parameter \(name.prefix(32))")
            }
        }
        return parameters
    }

    /// A decimal number of ASCII digits only (no sign, no spaces).
    private static func number<T: FixedWidthInteger>(_ text: String, _ name: String, as _: T.Type) throws -> T {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = T(text)
        else { throw OTPError(.invalidURI, "\(name) is not a decimal number in range") }
        return value
    }

    // MARK: - Names and percent-encoding

    /// Refuses an issuer or account that would not survive the round trip or that the Key
    /// Uri Format forbids (a colon).
    private static func checkName(_ name: String, _ what: String) throws {
        guard !name.isEmpty, name.utf8.count <= maximumNameByteCount else {
            throw OTPError(.invalidParameter, "\(what) empty or longer than \(maximumNameByteCount) bytes")
        }
        guard !name.contains(":") else { throw OTPError(.invalidParameter, "\(what) contains a colon") }
        guard name.first?.isWhitespace == false, name.last?.isWhitespace == false else {
            throw OTPError(.invalidParameter, "\(what) starts or ends with white space")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw OTPError(.invalidParameter, "\(what) contains a control character")
        }
    }

    /// `text` with every byte outside RFC 3986's unreserved set written as `%XX`.
    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text that `bytes` percent-encode; `+` reads as a space where `plusIsSpace`
    /// (parameter values, as HTML forms write them).
    ///
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidURI`` for a `%` not
    ///   followed by two hex digits, or decoded bytes that are not UTF-8.
    static func percentDecode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) throws -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let high = PercentEncoding.hexValue(bytes[index + 1]), let low = PercentEncoding.hexValue(bytes[index + 2])
                else { throw OTPError(.invalidURI, "bad percent escape") }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw OTPError(.invalidURI, "percent-decoded bytes are not UTF-8")
        }
        return text
    }


    private static func lowercased(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
    }
}
