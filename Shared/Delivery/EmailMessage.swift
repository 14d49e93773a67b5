import FoundationEssentials

/// An e-mail to send: sender, recipients, subject, a plain-text body and optionally an HTML
/// alternative, rendered to RFC 5322 by ``render(date:messageID:)``.
///
/// Building one checks every header value: CR, LF or NUL in the subject (or, through
/// ``EmailAddress``, in an address or display name) is refused as header injection, so a
/// message that exists can always be rendered safely. A non-ASCII subject travels as RFC 2047
/// encoded-words; bodies are UTF-8 in quoted-printable or base64, whichever is shorter.
///
/// `description` names no address, subject or body: all of them may be personal data, and the
/// body holds a one-time code.
public struct EmailMessage: Sendable, Hashable, CustomStringConvertible {
    /// The `From` mailbox, also used as the SMTP envelope sender (`MAIL FROM`).
    public let from: EmailAddress
    /// The `To` mailboxes, also the SMTP envelope recipients (`RCPT TO`); never empty.
    public let to: [EmailAddress]
    /// The subject, any Unicode text without line breaks.
    public let subject: String
    /// The plain-text body. Line breaks may be LF, CR or CRLF; they are sent as CRLF.
    public let textBody: String
    /// An HTML alternative to ``textBody``, sent as `multipart/alternative` when present.
    public let htmlBody: String?

    /// A message to one or more recipients.
    ///
    /// - Parameters:
    ///   - from: The sender.
    ///   - to: The recipients; at least one.
    ///   - subject: The subject; no CR, LF or NUL.
    ///   - textBody: The plain-text body.
    ///   - htmlBody: An optional HTML body, whose dynamic parts the caller has escaped (as
    ///     ``MessageTemplates`` does).
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/headerInjection``
    ///   for a line break in the subject, ``DeliveryError/Code-swift.struct/invalidMessage``
    ///   when `to` is empty.
    public init(from: EmailAddress, to: [EmailAddress], subject: String, textBody: String, htmlBody: String? = nil) throws {
        if HeaderText.containsLineBreak(subject) {
            throw DeliveryError(.headerInjection, detail: "line break in the subject")
        }
        guard !to.isEmpty else {
            throw DeliveryError(.invalidMessage, detail: "no recipient")
        }
        self.from = from
        self.to = to
        self.subject = subject
        self.textBody = textBody
        self.htmlBody = htmlBody
    }

    /// A message to one recipient, otherwise the same as the initialiser taking a list.
    ///
    /// - Throws: ``DeliveryError`` as the initialiser taking a list does.
    public init(from: EmailAddress, to: EmailAddress, subject: String, textBody: String, htmlBody: String? = nil) throws {
        try self.init(from: from, to: [to], subject: subject, textBody: textBody, htmlBody: htmlBody)
    }

    /// The number of recipients and whether there is an HTML part; nothing personal.
    public var description: String {
        "EmailMessage(recipients: \(to.count), html: \(htmlBody != nil))"
    }

    // MARK: - Rendering

    /// A fresh Message-ID for a sender's domain: `<random UUID@domain>` (RFC 5322 §3.6.4).
    ///
    /// - Parameter domain: The right-hand side, normally the sender's domain.
    public static func makeMessageID(domain: some StringProtocol) -> String {
        "<\(UUID().uuidString.lowercased())@\(domain)>"
    }

    /// The message as RFC 5322 text with CRLF line breaks, ready for SMTP `DATA`.
    ///
    /// Headers, in order: `Date`, `From`, `To`, `Subject`, `Message-ID`, `MIME-Version`,
    /// `Content-Type` and, for a single part, `Content-Transfer-Encoding`. With an HTML body
    /// the content is `multipart/alternative` with the text part first (RFC 2046 §5.1.4: the
    /// preferred alternative comes last). The boundary starts with `=_`, which neither
    /// quoted-printable nor base64 output can contain, so it never collides with a body.
    ///
    /// - Parameters:
    ///   - date: The `Date` header's time; now by default.
    ///   - messageID: The `Message-ID`, `<left@right>`; a fresh one at the sender's domain by
    ///     default.
    /// - Returns: The message text.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/headerInjection``
    ///   when `messageID` contains a line break, ``DeliveryError/Code-swift.struct/invalidMessage``
    ///   when it is not `<left@right>` of printable ASCII.
    public func render(date: Date = Date(), messageID: String? = nil) throws -> String {
        let messageID = messageID ?? Self.makeMessageID(domain: from.domain)
        try Self.validate(messageID: messageID)

        var headers: [(String, String)] = [
            ("Date", Self.rfc5322Date(date)),
            ("From", from.headerValue),
            ("To", HeaderText.fold(addressTokens(to), firstLineUsed: "To: ".count)),
            ("Subject", HeaderText.unstructured(subject, fieldName: "Subject")),
            ("Message-ID", messageID),
            ("MIME-Version", "1.0"),
        ]
        var body: String
        if let htmlBody {
            let boundary = Self.boundary(for: messageID)
            headers.append(("Content-Type", "multipart/alternative; boundary=\"\(boundary)\""))
            body = ""
            for (subtype, text) in [("plain", textBody), ("html", htmlBody)] {
                let encoding = MIMEEncoding.preferred(for: text)
                body += "--\(boundary)\r\n"
                body += "Content-Type: text/\(subtype); charset=utf-8\r\n"
                body += "Content-Transfer-Encoding: \(encoding.headerValue)\r\n\r\n"
                body += Self.terminated(encoding.encode(text))
            }
            body += "--\(boundary)--\r\n"
        } else {
            let encoding = MIMEEncoding.preferred(for: textBody)
            headers.append(("Content-Type", "text/plain; charset=utf-8"))
            headers.append(("Content-Transfer-Encoding", encoding.headerValue))
            body = Self.terminated(encoding.encode(textBody))
        }
        let head = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        return head + "\r\n" + body
    }

    // MARK: - Helpers

    private func addressTokens(_ addresses: [EmailAddress]) -> [String] {
        addresses.enumerated().map { index, address in
            index == addresses.count - 1 ? address.headerValue : address.headerValue + ","
        }
    }

    private static func terminated(_ text: String) -> String {
        text.isEmpty || text.hasSuffix("\r\n") ? text : text + "\r\n"
    }

    // RFC 5322 §3.6.4 msg-id = "<" id-left "@" id-right ">", kept to printable ASCII without
    // spaces, which is all any generator produces.
    private static func validate(messageID: String) throws {
        if HeaderText.containsLineBreak(messageID) {
            throw DeliveryError(.headerInjection, detail: "line break in the Message-ID")
        }
        let inner = messageID.dropFirst().dropLast()
        guard messageID.hasPrefix("<"), messageID.hasSuffix(">"), messageID.count <= 250,
            inner.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") }),
            inner.split(separator: "@", omittingEmptySubsequences: false).count == 2,
            !inner.hasPrefix("@"), !inner.hasSuffix("@")
        else {
            throw DeliveryError(.invalidMessage, detail: "Message-ID is not <left@right>")
        }
    }

    /// `=_signet_` and a 64-bit FNV-1a of the Message-ID in hex: stable for a message, so that
    /// rendering is deterministic.
    static func boundary(for messageID: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in messageID.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "=_signet_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date in RFC 5322 §3.3 form, in UTC: `Tue, 01 Jul 2025 12:00:00 +0000`. Written by
    /// hand rather than with a `DateFormatter` so that no locale can change the names.
    static func rfc5322Date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        // .gmt, not TimeZone(identifier: "UTC"): named zones need FoundationInternationalization.
        calendar.timeZone = .gmt
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        func two(_ value: Int?) -> String {
            let value = value ?? 0
            return value < 10 ? "0\(value)" : "\(value)"
        }
        let weekday = weekdays[(parts.weekday ?? 1) - 1]
        let month = months[(parts.month ?? 1) - 1]
        return "\(weekday), \(two(parts.day)) \(month) \(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }
}
