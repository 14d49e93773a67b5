extension CBORValue {
    /// The value in CBOR's preferred serialization (RFC 8949 §4.1): shortest heads, definite
    /// lengths, map entries in the order held. Floats are written as doubles.
    ///
    /// Signet rarely emits CBOR; this serves tests and the few places that build COSE keys.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let n): Self.head(0, n, into: &out)
        case .negative(let n): Self.head(1, n, into: &out)
        case .bytes(let b):
            Self.head(2, UInt64(b.count), into: &out)
            out += b
        case .text(let s):
            Self.head(3, UInt64(s.utf8.count), into: &out)
            out += Array(s.utf8)
        case .array(let a):
            Self.head(4, UInt64(a.count), into: &out)
            for element in a { element.encode(into: &out) }
        case .map(let m):
            Self.head(5, UInt64(m.count), into: &out)
            for entry in m {
                entry.key.encode(into: &out)
                entry.value.encode(into: &out)
            }
        case .tagged(let tag, let v):
            Self.head(6, tag, into: &out)
            v.encode(into: &out)
        case .simple(let s):
            if s < 24 { out.append(0xE0 | s) } else { out += [0xF8, s] }
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let d):
            out.append(0xFB)
            let bits = d.bitPattern
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let m = major << 5
        switch value {
        case 0..<24: out.append(m | UInt8(value))
        case 24...0xFF: out += [m | 24, UInt8(value)]
        case 0x100...0xFFFF: out += [m | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 0x1_0000...0xFFFF_FFFF:
            out.append(m | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        default:
            out.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
    }

    /// An integer value: `.unsigned` for n ≥ 0, `.negative` otherwise.
    public static func int(_ n: Int) -> CBORValue {
        n >= 0 ? .unsigned(UInt64(n)) : .negative(UInt64(-1 - n))
    }
}
