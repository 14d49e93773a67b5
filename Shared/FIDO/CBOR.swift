/// One decoded CBOR data item (RFC 8949), as ``CBORDecoder`` produces it.
///
/// Maps keep their entries in the order they were encoded, so callers can see exactly what the
/// authenticator sent; ``CBORDecoder`` has already refused duplicate keys. Text compares and
/// hashes by its UTF-8 bytes (CBOR's notion of equality), not by Unicode canonical equivalence.
public enum CBORValue: Sendable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`, holding `n` so that the whole range fits.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a text string (valid UTF-8).
    case text(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map, in encoded order.
    case map([(key: CBORValue, value: CBORValue)])
    /// Major type 6: a tagged item.
    indirect case tagged(UInt64, CBORValue)
    /// Major type 7: an unassigned simple value (0–19 or 32–255).
    case simple(UInt8)
    /// Major type 7: `false` / `true`.
    case bool(Bool)
    /// Major type 7: `null`.
    case null
    /// Major type 7: `undefined`.
    case undefined
    /// Major type 7: a half-, single- or double-precision float, widened to `Double`.
    case float(Double)
}

// MARK: - Accessors

extension CBORValue {
    /// The value as a signed integer, when it is an integer that fits in `Int`.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): return n <= UInt64(Int.max) ? -1 - Int(n) : nil
        default: return nil
        }
    }

    /// The bytes of a byte string.
    public var bytesValue: [UInt8]? {
        if case .bytes(let b) = self { return b }
        return nil
    }

    /// The text of a text string.
    public var textValue: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    /// The elements of an array.
    public var arrayValue: [CBORValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The entries of a map, in encoded order.
    public var mapValue: [(key: CBORValue, value: CBORValue)]? {
        if case .map(let m) = self { return m }
        return nil
    }

    /// Whether the value is a map.
    public var isMap: Bool {
        if case .map = self { return true }
        return false
    }

    /// The value of the map entry whose key is the integer `key` (COSE labels), if any.
    public subscript(intKey key: Int) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key.intValue == key && $0.key.isInteger }?.value
    }

    /// The value of the map entry whose key is the text `key`, if any.
    public subscript(textKey key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first {
            if case .text(let t) = $0.key { return t.utf8.elementsEqual(key.utf8) }
            return false
        }?.value
    }

    var isInteger: Bool {
        switch self {
        case .unsigned, .negative: true
        default: false
        }
    }
}

// MARK: - Equality

extension CBORValue: Hashable {
    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)): return a == b
        case (.negative(let a), .negative(let b)): return a == b
        case (.bytes(let a), .bytes(let b)): return a == b
        case (.text(let a), .text(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): return a == b
        case (.map(let a), .map(let b)):
            guard a.count == b.count else { return false }
            for (x, y) in zip(a, b) where x.key != y.key || x.value != y.value { return false }
            return true
        case (.tagged(let ta, let a), .tagged(let tb, let b)): return ta == tb && a == b
        case (.simple(let a), .simple(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null), (.undefined, .undefined): return true
        // Bit patterns, not IEEE equality: NaN == NaN is false, which let a map hold the same
        // NaN key twice past the duplicate-key check (a Set of keys); seen while examining a
        // CBORFuzz report.
        case (.float(let a), .float(let b)): return a.bitPattern == b.bitPattern
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unsigned(let n):
            hasher.combine(0 as UInt8)
            hasher.combine(n)
        case .negative(let n):
            hasher.combine(1 as UInt8)
            hasher.combine(n)
        case .bytes(let b):
            hasher.combine(2 as UInt8)
            hasher.combine(b)
        case .text(let s):
            hasher.combine(3 as UInt8)
            hasher.combine(s.utf8.count)
            for byte in s.utf8 { hasher.combine(byte) }
        case .array(let a):
            hasher.combine(4 as UInt8)
            hasher.combine(a)
        case .map(let m):
            hasher.combine(5 as UInt8)
            hasher.combine(m.count)
            for entry in m {
                hasher.combine(entry.key)
                hasher.combine(entry.value)
            }
        case .tagged(let tag, let v):
            hasher.combine(6 as UInt8)
            hasher.combine(tag)
            hasher.combine(v)
        case .simple(let s):
            hasher.combine(7 as UInt8)
            hasher.combine(s)
        case .bool(let b):
            hasher.combine(8 as UInt8)
            hasher.combine(b)
        case .null:
            hasher.combine(9 as UInt8)
        case .undefined:
            hasher.combine(10 as UInt8)
        case .float(let d):
            hasher.combine(11 as UInt8)
            hasher.combine(d.bitPattern)
        }
    }
}
