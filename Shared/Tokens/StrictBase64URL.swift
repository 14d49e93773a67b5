/// Base64url decoding for JOSE (RFC 7515 §2, RFC 4648 §5): no padding, no whitespace, nothing
/// outside the alphabet, and only the canonical encoding.
///
/// Canonical means the unused low bits of the last character are zero: otherwise `…Q` and
/// `…R` would decode to the same bytes and one token would have several spellings, which
/// defeats anything that keys on the token text (deny lists, replay caches, logs).
enum StrictBase64URL {
    private static let invalid: UInt8 = 0xFF

    private static let table: [UInt8] = {
        var t = [UInt8](repeating: invalid, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        return t
    }()

    /// The decoded bytes, or nil if `text` is not canonical unpadded base64url.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text {
            let v = table[Int(c)]
            guard v != invalid else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Left-over bits (2 or 4) must be zero for the encoding to be canonical.
        guard accumulator == 0 else { return nil }
        return out
    }

    /// The decoded bytes of a string.
    static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}
