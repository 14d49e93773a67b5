/// A MIME content transfer encoding for a body part (RFC 2045 §6).
///
/// Bodies are always UTF-8 text with CRLF line breaks; the encoding only decides how those
/// bytes travel through 7-bit SMTP.
public enum MIMEEncoding: String, Sendable, Hashable {
    /// Quoted-printable (RFC 2045 §6.7): readable for mostly-ASCII text.
    case quotedPrintable = "quoted-printable"
    /// Base64 (RFC 2045 §6.8): compact for text that is mostly non-ASCII.
    case base64 = "base64"

    /// The `Content-Transfer-Encoding` value.
    public var headerValue: String { rawValue }

    /// The encoding that keeps the text shortest: quoted-printable unless more than a sixth of
    /// its bytes would need escaping (each escape costs three bytes against base64's 4/3).
    public static func preferred(for text: String) -> MIMEEncoding {
        let bytes = Array(text.utf8)
        let escaped = bytes.count(where: { $0 >= 0x80 || $0 == UInt8(ascii: "=") })
        return escaped * 6 > bytes.count ? .base64 : .quotedPrintable
    }

    /// The text encoded for a body part, with CRLF line breaks and no line above 76 characters.
    ///
    /// - Parameter text: The body; any mix of CRLF, CR and LF counts as line breaks.
    public func encode(_ text: String) -> String {
        let normalized = Self.normalizingLineBreaks(text)
        switch self {
        case .quotedPrintable: return Self.quotedPrintable(normalized)
        case .base64: return Self.base64Lines(Array(normalized.utf8))
        }
    }

    // MARK: - Line breaks

    /// The text with every CRLF, lone CR and lone LF written as CRLF (RFC 5322 §2.3: CR and LF
    /// appear only together).
    static func normalizingLineBreaks(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            switch scalar {
            case "\r":
                result += "\r\n"
                if pending == "\n" { pending = scalars.next() }
            case "\n":
                result += "\r\n"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: - Quoted-printable (RFC 2045 §6.7)

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// Quoted-printable for text whose line breaks are already CRLF: hard breaks stay CRLF,
    /// soft breaks (`=` CRLF) keep every line within 76 characters, white space at a line's
    /// end and a dot at a line's start are escaped (the latter so that no SMTP relay's dot
    /// handling can touch the body).
    static func quotedPrintable(_ text: String) -> String {
        var output: [UInt8] = []
        // "\r\n" is one Character in Swift, so this splits at line breaks only.
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        for (lineIndex, line) in lines.enumerated() {
            if lineIndex > 0 { output.append(contentsOf: [0x0D, 0x0A]) }
            let bytes = Array(line.utf8)
            var lineLength = 0
            for (index, byte) in bytes.enumerated() {
                let isLast = index == bytes.count - 1
                var token: [UInt8]
                if (byte >= 33 && byte <= 126 && byte != UInt8(ascii: "=")) || ((byte == 0x20 || byte == 0x09) && !isLast) {
                    token = [byte]
                } else {
                    token = [UInt8(ascii: "="), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
                }
                if byte == UInt8(ascii: "."), lineLength == 0 {
                    token = Array("=2E".utf8)
                }
                // A soft break needs one column for its `=`; the line's last token may use it.
                let limit = isLast ? 76 : 75
                if lineLength + token.count > limit {
                    output.append(contentsOf: [UInt8(ascii: "="), 0x0D, 0x0A])
                    lineLength = 0
                    if byte == UInt8(ascii: ".") { token = Array("=2E".utf8) }
                }
                output.append(contentsOf: token)
                lineLength += token.count
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: - Base64 (RFC 4648 §4)

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Base64 of the bytes on one line, with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index]
            let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
            let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            output.append(alphabet[Int(b0 >> 2)])
            output.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            output.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            output.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Base64 of the bytes in lines of 76 characters separated by CRLF (RFC 2045 §6.8).
    static func base64Lines(_ bytes: [UInt8]) -> String {
        let encoded = Array(base64(bytes).utf8)
        var lines: [String] = []
        var start = 0
        while start < encoded.count {
            let end = min(start + 76, encoded.count)
            lines.append(String(decoding: encoded[start..<end], as: UTF8.self))
            start = end
        }
        return lines.joined(separator: "\r\n")
    }
}
