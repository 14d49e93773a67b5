/// Writes compact JSON: the objects Signet signs and publishes (JWS headers, claim sets,
/// JWKs) and HTTP response bodies.
///
/// Output is deterministic: no whitespace, members of a `JSONValue.object` sorted by key,
/// `/` not escaped, non-ASCII left as UTF-8. Where member order is part of a documented form
/// (the JWS header `{"alg","typ","kid"}`), callers write ordered members with
/// ``writeObject(_:)``.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public init() {}

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d):
            // JSON has no NaN or infinity.
            if !d.isFinite {
                append("null")
            } else if d.rounded() == d, let i = Int64(exactly: d) {
                append(String(i))
            } else {
                append(d.description)
            }
        case .string(let s): writeEscaped(s)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            writeObject(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }
    }

    // Pieces, for writers of trees other than JSONValue (JSONValueEncoder, and the
    // `JSONDirectEncodable` types that write themselves).
    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")) }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { bytes.append(UInt8(ascii: "[")) }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }
    public mutating func writeComma() { bytes.append(UInt8(ascii: ",")) }
    /// Reserves room for `n` more bytes (a body whose size is roughly known).
    public mutating func reserveCapacity(_ n: Int) { bytes.reserveCapacity(bytes.count + n) }
    /// A string value, escaped as ``write(_:)`` escapes `.string`.
    public mutating func writeString(_ s: String) { writeEscaped(s) }
    /// An integer value.
    public mutating func writeInt(_ i: Int) { append(String(i)) }
    /// `true` or `false`.
    public mutating func writeBool(_ b: Bool) { append(b ? "true" : "false") }
    /// An array of strings.
    public mutating func writeStrings(_ strings: [String]) {
        beginArray()
        for (i, s) in strings.enumerated() {
            if i > 0 { writeComma() }
            writeEscaped(s)
        }
        endArray()
    }
    /// `"name":`, after a comma unless it is the object's first member.
    public mutating func writeMemberName(_ name: String, first: Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        writeEscaped(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Writes an object with its members in the given order.
    public mutating func writeObject(_ members: [(String, JSONValue)]) {
        bytes.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            writeEscaped(member.0)
            bytes.append(UInt8(ascii: ":"))
            write(member.1)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func writeEscaped(_ s: String) {
        var s = s
        // One pass over the string's contiguous UTF-8 (a native string's own buffer, no copy):
        // runs that need no escape are copied whole (in a sign-in's bodies, every string).
        s.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            var start = 0
            for i in utf8.indices {
                let c = utf8[i]
                if c >= 0x20 && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") { continue }
                if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
                start = i + 1
                switch c {
                case UInt8(ascii: "\""): append("\\\"")
                case UInt8(ascii: "\\"): append("\\\\")
                case 0x0A: append("\\n")
                case 0x0D: append("\\r")
                case 0x09: append("\\t")
                case 0x08: append("\\b")
                case 0x0C: append("\\f")
                default:
                    let hex: StaticString = "0123456789abcdef"
                    append("\\u00")
                    bytes.append(hex.utf8Start[Int(c >> 4)])
                    bytes.append(hex.utf8Start[Int(c & 0xF)])
                }
            }
            if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Text appended as it is, unescaped and unquoted: punctuation, member names known to need
    /// no escape, a fragment already encoded as JSON (an OTLP request's resource, encoded once),
    /// or a text log line's fields. The caller answers for the result being what it claims.
    public mutating func writeRaw(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private mutating func append(_ s: String) { bytes.append(contentsOf: s.utf8) }
    /// One byte as is (the module's own writers of fixed-form values).
    mutating func appendByte(_ b: UInt8) { bytes.append(b) }
}
