/// Header field text: injection checks, RFC 2047 encoded-words, RFC 5322 quoting and folding.
enum HeaderText {
    /// The longest line a header should have (RFC 5322 §2.1.1 "SHOULD be no more than 78";
    /// RFC 2047 §2 asks 76 for lines that carry encoded-words, which is what is used).
    static let lineLimit = 76

    /// Bytes of UTF-8 per encoded-word: 36 bytes make 48 base64 characters and a 60-character
    /// word, which fits after the longest field name used here (`Subject: `) within
    /// ``lineLimit`` and is below RFC 2047's 75.
    static let encodedWordBytes = 36

    /// Whether the text contains CR, LF or NUL, any of which would end the header line early.
    static func containsLineBreak(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }
    }

    /// Whether the text needs RFC 2047 encoding to travel in a header: a non-ASCII character,
    /// a control character other than tab, or `=?`, which a reader would take for the start
    /// of an encoded-word.
    static func needsEncoding(_ text: String) -> Bool {
        if text.contains("=?") { return true }
        return text.unicodeScalars.contains { $0.value > 0x7E || ($0.value < 0x20 && $0 != "\t") }
    }

    // MARK: - Encoded-words (RFC 2047)

    /// The text as `=?utf-8?B?…?=` words, each of at most ``encodedWordBytes`` of UTF-8 and
    /// never splitting a Unicode scalar (RFC 2047 §5 (3): each word holds whole characters).
    static func encodedWords(_ text: String) -> [String] {
        var words: [String] = []
        var chunk: [UInt8] = []
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if chunk.count + bytes.count > encodedWordBytes, !chunk.isEmpty {
                words.append(encodedWord(chunk))
                chunk.removeAll(keepingCapacity: true)
            }
            chunk.append(contentsOf: bytes)
        }
        if !chunk.isEmpty || words.isEmpty { words.append(encodedWord(chunk)) }
        return words
    }

    private static func encodedWord(_ bytes: [UInt8]) -> String {
        "=?utf-8?B?\(MIMEEncoding.base64(bytes))?="
    }

    // MARK: - Unstructured fields (Subject)

    /// An unstructured field (`Subject`) ready to write after `name: `, folded with CRLF SP so
    /// that no line passes ``lineLimit`` where it can be helped.
    ///
    /// ASCII text is folded at spaces; anything else becomes encoded-words, one per line.
    /// Adjacent encoded-words separated by folding white space decode as one text (RFC 2047
    /// §6.2), so the split is invisible to the reader.
    static func unstructured(_ text: String, fieldName: String) -> String {
        let tokens = text.split(separator: " ", omittingEmptySubsequences: false)
        if needsEncoding(text) || tokens.contains(where: { $0.count > lineLimit - fieldName.count - 2 }) {
            return fold(encodedWords(text), firstLineUsed: fieldName.count + 2)
        }
        return fold(tokens.map(String.init), firstLineUsed: fieldName.count + 2)
    }

    /// Joins tokens with single spaces, putting CRLF before a space wherever the next token
    /// would pass ``lineLimit``.
    static func fold(_ tokens: [String], firstLineUsed: Int) -> String {
        var result = ""
        var lineLength = firstLineUsed
        for (index, token) in tokens.enumerated() {
            if index == 0 {
                result += token
                lineLength += token.utf8.count
            } else if lineLength + 1 + token.utf8.count > lineLimit, !token.isEmpty {
                result += "\r\n \(token)"
                lineLength = 1 + token.utf8.count
            } else {
                result += " \(token)"
                lineLength += 1 + token.utf8.count
            }
        }
        return result
    }

    // MARK: - Phrases (display names)

    /// A display name as an RFC 5322 `phrase`: atoms as they are, a quoted-string when it has
    /// specials, encoded-words when it is not plain ASCII.
    static func phrase(_ text: String) -> String {
        if needsEncoding(text) { return encodedWords(text).joined(separator: " ") }
        if text.utf8.allSatisfy(isAtomTextOrSpace), !text.hasPrefix(" "), !text.hasSuffix(" "), !text.contains("  ") {
            return text
        }
        var quoted = "\""
        for character in text {
            if character == "\"" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        quoted.append("\"")
        return quoted
    }

    // RFC 5322 §3.2.3 atext, plus the space between atoms.
    private static func isAtomTextOrSpace(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: " "):
            true
        default:
            Array("!#$%&'*+-/=?^_`{|}~".utf8).contains(byte)
        }
    }
}
