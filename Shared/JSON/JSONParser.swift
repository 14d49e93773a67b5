/// The strict JSON parser (RFC 8259) of everything Signet reads from outside: HTTP request
/// bodies, JOSE headers, claims and keys, WebAuthn client data, FIDO metadata, SafetyNet
/// payloads, FIDO policies.
///
/// Foundation's decoders silently accept duplicate member names, and disagree on which one
/// wins (`JSONDecoder` keeps the first, `JSONSerialization` the last). A JOSE header or
/// claim set with two `alg`s or two `aud`s, client data with two `challenge`s, or a request
/// body with two `username`s is exactly where such a differential is exploited, so this
/// parser refuses duplicates (RFC 7515 §5.2 step 4, RFC 7519 §4), as well as invalid UTF-8,
/// lone surrogates, trailing content, numbers out of range and nesting deeper than a bound.
/// Integers that fit in `Int64` stay exact.
public struct JSONParser {
    /// Nesting deeper than this is refused; JOSE objects are shallow.
    public static let defaultMaximumDepth = 16

    private let bytes: [UInt8]
    private var index = 0
    private let maximumDepth: Int

    private init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Why a text is not acceptable JSON: a fixed reason and the byte offset, never content.
    public struct SyntaxError: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public let offset: Int
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses one JSON text.
    ///
    /// - Parameter allowingByteOrderMark: skip a leading UTF-8 byte-order mark, as WebAuthn's
    ///   "UTF-8 decode" of client data does.
    public static func parse(
        _ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth, allowingByteOrderMark: Bool = false
    ) throws(SyntaxError) -> JSONValue {
        var parser = JSONParser(bytes, maximumDepth: maximumDepth)
        do throws(Failure) {
            if allowingByteOrderMark, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.index == parser.bytes.count else { throw Failure("trailing content") }
            return value
        } catch {
            throw SyntaxError(reason: error.reason, offset: parser.index)
        }
    }

    private struct Failure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    // MARK: - Grammar

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw Failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw Failure("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let n = literal.utf8CodeUnitCount
        guard index + n <= bytes.count else { throw Failure("unexpected end") }
        for i in 0..<n where bytes[index + i] != literal.utf8Start[i] { throw Failure("bad literal") }
        index += n
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maximumDepth else { throw Failure("nesting too deep") }
        index += 1  // {
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        // Room for six members in one allocation (the sign-in bodies' objects have two to
        // five): growing from empty allocated and rehashed up to three times (perf on
        // signet-bench json: the finish body's parse went from 0.36 to 0.25 of JSONDecoder's
        // time on the same bytes).
        var members = [String: JSONValue](minimumCapacity: 6)
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Failure("expected a member name") }
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Failure("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            guard members.updateValue(value, forKey: name) == nil else { throw Failure("duplicate member name") }
            skipWhitespace()
            guard index < bytes.count else { throw Failure("unexpected end") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            } else {
                throw Failure("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maximumDepth else { throw Failure("nesting too deep") }
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw Failure("unexpected end") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                throw Failure("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws(Failure) -> String {
        index += 1  // opening quote
        // Fast path: a string without escapes (member names, base64url, most values) is
        // validated and copied in one go. ASCII (every byte below 0x80, which the scan ORs
        // together) is valid UTF-8 as it stands and is copied without a second pass; only
        // other text goes through `String(validating:)`, whose generic code looks up type
        // metadata on every call (signet-bench json, perf).
        var end = index
        var seen: UInt8 = 0
        while end < bytes.count {
            let c = bytes[end]
            if c == UInt8(ascii: "\"") {
                let s: String
                if seen < 0x80 {
                    s = String(decoding: bytes[index..<end], as: UTF8.self)
                } else {
                    guard let valid = String(validating: bytes[index..<end], as: UTF8.self) else { throw Failure("invalid UTF-8") }
                    s = valid
                }
                index = end + 1
                return s
            }
            if c == UInt8(ascii: "\\") || c < 0x20 { break }
            seen |= c
            end += 1
        }
        var out: [UInt8] = Array(bytes[index..<end])
        index = end
        while true {
            guard index < bytes.count else { throw Failure("unterminated string") }
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                // Raw bytes ≥ 0x80 were copied as they came: the whole string must be UTF-8.
                guard let s = String(validating: out, as: UTF8.self) else { throw Failure("invalid UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                try parseEscape(into: &out)
            case 0x00..<0x20:
                throw Failure("control character in string")
            default:
                out.append(c)
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(Failure) {
        guard index < bytes.count else { throw Failure("unterminated escape") }
        let e = bytes[index]
        index += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw Failure("lone surrogate") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw Failure("lone surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw Failure("lone surrogate")
            }
            guard let u = Unicode.Scalar(scalar) else { throw Failure("invalid escape") }
            out.append(contentsOf: Array(String(Character(u)).utf8))
        default:
            throw Failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw Failure("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            index += 1
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw Failure("bad hex digit")
            }
            v = v << 4 | digit
        }
        return v
    }

    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        // int = zero / ( digit1-9 *DIGIT )
        guard index < bytes.count, isDigit(bytes[index]) else { throw Failure("bad number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw Failure("leading zero") }
        } else {
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw Failure("bad fraction") }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw Failure("bad exponent") }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw Failure("number out of range") }
        // A non-zero literal that underflows to zero (1e-400) is out of range too, not 0.
        if d == 0, text.utf8.prefix(while: { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }).contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
            throw Failure("number out of range")
        }
        return .double(d)
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }
}
