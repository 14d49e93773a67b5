/// An Authenticator Attestation GUID: 16 bytes naming an authenticator model (all zero when
/// the authenticator does not say, e.g. with `none` attestation).
public struct AAGUID: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes, in the order they appear in authenticator data.
    public let bytes: [UInt8]

    /// The all-zero AAGUID.
    public static let zero = AAGUID(unchecked: [UInt8](repeating: 0, count: 16))

    /// - Returns: nil unless `bytes` has exactly 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the textual form, e.g. `adce0002-35bc-c60a-648b-0b25f1f05503` (any case).
    public init?(_ string: String) {
        let utf8 = Array(string.utf8)
        if utf8.count == 36 {
            for i in [8, 13, 18, 23] where utf8[i] != 0x2D { return nil }
        } else if utf8.count != 32 {
            return nil
        }
        let hex = utf8.filter { $0 != 0x2D }
        guard hex.count == 32 else { return nil }
        var out: [UInt8] = []
        var high: UInt8?
        for c in hex {
            let nibble: UInt8
            switch c {
            case 0x30...0x39: nibble = c - 0x30
            case 0x61...0x66: nibble = c - 0x61 + 10
            case 0x41...0x46: nibble = c - 0x41 + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self.bytes = out
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Whether this is the all-zero AAGUID.
    public var isZero: Bool { bytes.allSatisfy { $0 == 0 } }

    /// Lower-case 8-4-4-4-12 form, as metadata statements write it.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(0x2D) }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
