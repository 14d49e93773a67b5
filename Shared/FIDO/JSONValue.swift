/// A JSON value as the strict parser of client data produces it (RFC 8259).
///
/// Internal: ``CollectedClientData`` is its only user. Foundation's `JSONSerialization` is
/// avoided on purpose: it accepts duplicate keys (silently keeping one, so `type` or `challenge`
/// could be smuggled), turns `1` into `true` on `as? Bool`, and is slow on the hot path of every
/// sign-in.
enum JSONValue: Sendable, Equatable {
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    /// The number's literal text (validated against the RFC 8259 grammar).
    case number(String)
    case bool(Bool)
    case null

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    /// The member `key` of an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Why parsing failed (a fixed reason and the byte offset; never input content).
    struct ParseError: Error, Sendable {
        let reason: String
        let offset: Int
    }

    /// Parses `bytes` as one JSON text: UTF-8 (a leading byte-order mark is skipped, as
    /// WebAuthn's "UTF-8 decode" requires), no duplicate member names, at most `maxDepth`
    /// nested arrays/objects, nothing but whitespace after the value.
    static func parse(_ bytes: [UInt8], maxDepth: Int = 16) throws(ParseError) -> JSONValue {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw ParseError(reason: "not UTF-8", offset: 0) }
        var parser = Parser(bytes: bytes, maxDepth: maxDepth)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3 }
        parser.skipWhitespace()
        let value = try parser.value(depth: 1)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw ParseError(reason: "data after the JSON value", offset: parser.position) }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        let maxDepth: Int
        var position = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func fail(_ reason: String) -> ParseError { ParseError(reason: reason, offset: position) }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let c = current, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { position += 1 }
        }

        mutating func expect(_ literal: String) throws(ParseError) {
            for c in literal.utf8 {
                guard current == c else { throw fail("invalid literal") }
                position += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard let c = current else { throw fail("unexpected end") }
            switch c {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try expect("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expect("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try expect("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested too deeply") }
            position += 1  // {
            var members: [(key: String, value: JSONValue)] = []
            var names = Set<String>()
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let nameStart = position
                let name = try string()
                guard names.insert(name).inserted else { throw ParseError(reason: "duplicate member name", offset: nameStart) }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw fail("expected ':'") }
                position += 1
                skipWhitespace()
                members.append((key: name, value: try value(depth: depth + 1)))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return .object(members)
                default: throw fail("expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= maxDepth else { throw fail("nested too deeply") }
            position += 1  // [
            var elements: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return .array(elements)
                default: throw fail("expected ',' or ']'")
                }
            }
        }

        mutating func string() throws(ParseError) -> String {
            position += 1  // opening quote
            var out: [UInt8] = []
            while true {
                guard let c = current else { throw fail("unterminated string") }
                position += 1
                switch c {
                case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let e = current else { throw fail("unterminated escape") }
                    position += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard current == UInt8(ascii: "\\") else { throw fail("lone surrogate") }
                            position += 1
                            guard current == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                            position += 1
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw fail("lone surrogate")
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                        out += Array(String(Character(unicode)).utf8)
                    default: throw fail("invalid escape")
                    }
                case 0x00..<0x20: throw fail("control character in string")
                default: out.append(c)
                }
            }
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let c = current else { throw fail("truncated \\u escape") }
                position += 1
                let nibble: UInt32
                switch c {
                case 0x30...0x39: nibble = UInt32(c - 0x30)
                case 0x61...0x66: nibble = UInt32(c - 0x61 + 10)
                case 0x41...0x46: nibble = UInt32(c - 0x41 + 10)
                default: throw fail("invalid \\u escape")
                }
                v = v << 4 | nibble
            }
            return v
        }

        mutating func number() throws(ParseError) -> String {
            let start = position
            func digits(_ p: inout Parser) -> Int {
                var n = 0
                while let c = p.current, c >= 0x30, c <= 0x39 {
                    p.position += 1
                    n += 1
                }
                return n
            }
            if current == UInt8(ascii: "-") { position += 1 }
            if current == UInt8(ascii: "0") {
                position += 1
            } else {
                guard digits(&self) > 0 else { throw fail("invalid number") }
            }
            if current == UInt8(ascii: ".") {
                position += 1
                guard digits(&self) > 0 else { throw fail("invalid number") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                guard digits(&self) > 0 else { throw fail("invalid number") }
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }
    }
}
