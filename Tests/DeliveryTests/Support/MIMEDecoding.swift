import Foundation

/// Independent decoders for what the library encodes, so that tests check round trips rather
/// than the encoder against itself.
enum MIMEDecoding {
    /// Decodes quoted-printable (RFC 2045 §6.7): soft breaks removed, `=XX` to bytes.
    static func quotedPrintable(_ text: String) -> String {
        var bytes: [UInt8] = []
        let input = Array(text.utf8)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "=") {
                if index + 2 < input.count, input[index + 1] == 0x0D, input[index + 2] == 0x0A {
                    index += 3
                    continue
                }
                if index + 2 < input.count, let value = UInt8(String(decoding: input[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                    bytes.append(value)
                    index += 3
                    continue
                }
            }
            bytes.append(byte)
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes base64 spread over lines.
    static func base64(_ text: String) -> String? {
        // "\r\n" is one Character, so filter by isNewline rather than by "\r" and "\n".
        let joined = text.filter { !$0.isNewline }
        return Data(base64Encoded: joined).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Decodes an unstructured header value: unfolds, then replaces each `=?utf-8?B?…?=` word
    /// (white space between adjacent words dropped, RFC 2047 §6.2).
    static func headerValue(_ folded: String) -> String {
        let unfolded = folded.replacingOccurrences(of: "\r\n ", with: " ")
        let words = unfolded.split(separator: " ", omittingEmptySubsequences: false)
        guard words.allSatisfy({ $0.hasPrefix("=?utf-8?B?") && $0.hasSuffix("?=") }) else { return unfolded }
        return words.map { base64(String($0.dropFirst(10).dropLast(2))) ?? "<bad>" }.joined()
    }

    /// The value of the first header `name` in a message, with its folding kept.
    static func header(_ name: String, in message: String) -> String? {
        let head = message.components(separatedBy: "\r\n\r\n").first ?? ""
        var lines = head.components(separatedBy: "\r\n")[...]
        while let line = lines.popFirst() {
            guard line.lowercased().hasPrefix(name.lowercased() + ":") else { continue }
            var value = String(line.dropFirst(name.count + 1).drop { $0 == " " })
            while let next = lines.first, next.hasPrefix(" ") || next.hasPrefix("\t") {
                value += "\r\n" + next
                lines.removeFirst()
            }
            return value
        }
        return nil
    }
}
