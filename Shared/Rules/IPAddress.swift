/// An IP address in one 128-bit space: IPv6 addresses as they are, IPv4 addresses as their
/// IPv4-mapped IPv6 form `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2).
///
/// So `192.0.2.1` and `::ffff:192.0.2.1` (or `::ffff:c000:201`) are the same address, and an
/// IPv4 CIDR block matches both, which is what a rule about IPv4 networks means when a dual-stack
/// proxy reports the client as mapped.
///
/// Parsing is strict: IPv4 is four dotted decimal octets without leading zeros (`010.0.0.1`
/// is refused, since some parsers read it as octal); IPv6 is up to eight groups of 1–4
/// hexadecimal digits with at most one `::` and an optional dotted IPv4 tail. Zone indices
/// (`fe80::1%eth0`), brackets and ports are refused.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The high 64 bits, in network order (the first four groups).
    public let high: UInt64
    /// The low 64 bits, in network order (the last four groups).
    public let low: UInt64

    /// The first 64 bits of every IPv4-mapped address (`::ffff:0:0/96`).
    static let mappedHigh: UInt64 = 0
    /// The bits 64–95 of every IPv4-mapped address, in place in the low 64 bits.
    static let mappedLowPrefix: UInt64 = 0x0000_FFFF_0000_0000

    /// An address from its 128 bits.
    ///
    /// - Parameters:
    ///   - high: The first 64 bits.
    ///   - low: The last 64 bits.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The IPv4-mapped address of an IPv4 address given as a 32-bit number.
    ///
    /// - Parameter ipv4: The address, `a << 24 | b << 16 | c << 8 | d`.
    public init(ipv4: UInt32) {
        self.init(high: Self.mappedHigh, low: Self.mappedLowPrefix | UInt64(ipv4))
    }

    /// The address written in `text` (IPv4 dotted decimal or IPv6), or `nil` when it is not one.
    ///
    /// - Parameter text: `192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1`, `::`.
    public init?(_ text: String) {
        // No address is longer than 45 characters (an IPv6 form with an IPv4 tail).
        guard text.utf8.count <= 45 else { return nil }
        var text = text
        let parsed = text.withUTF8 { bytes -> IPAddress? in
            if bytes.contains(UInt8(ascii: ":")) { return Self.parseIPv6(bytes) }
            return Self.parseIPv4(bytes[...]).map { IPAddress(ipv4: $0) }
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// Whether this is an IPv4 address (an IPv4-mapped IPv6 address).
    public var isIPv4: Bool { high == Self.mappedHigh && low >> 32 == Self.mappedLowPrefix >> 32 }

    /// IPv4 dotted decimal for IPv4 (and mapped) addresses, else the RFC 5952 IPv6 text:
    /// lowercase, leading zeros dropped, the longest run of two or more zero groups as `::`.
    public var description: String {
        if isIPv4 {
            let v4 = UInt32(truncatingIfNeeded: low)
            return [24, 16, 8, 0].map { String((v4 >> UInt32($0)) & 0xFF) }.joined(separator: ".")
        }
        let groups = (0..<8).map { i -> UInt16 in
            let word = i < 4 ? high : low
            return UInt16(truncatingIfNeeded: word >> UInt64(48 - 16 * (i % 4)))
        }
        // The longest run of zero groups (the first one on a tie), if at least two long.
        var best = (start: -1, length: 0)
        var run = (start: -1, length: 0)
        for (i, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return "\(head)::\(tail)"
    }

    // MARK: - Parsing

    /// Four dotted decimal octets, each 0–255 without leading zeros.
    static func parseIPv4(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> UInt32? {
        var value: UInt32 = 0
        var octets = 0
        var index = bytes.startIndex
        while true {
            var octet: UInt32 = 0
            var digits = 0
            var first: UInt8 = 0
            while index < bytes.endIndex, bytes[index].isASCIIDigit {
                if digits == 0 { first = bytes[index] }
                octet = octet * 10 + UInt32(bytes[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
                if digits > 3 { return nil }
            }
            guard digits > 0, octet <= 255, digits == 1 || first != UInt8(ascii: "0") else { return nil }
            value = value << 8 | octet
            octets += 1
            if octets == 4 { return index == bytes.endIndex ? value : nil }
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") else { return nil }
            index += 1
        }
    }

    /// Up to eight hexadecimal groups with at most one `::` and an optional IPv4 tail.
    static func parseIPv6(_ bytes: UnsafeBufferPointer<UInt8>) -> IPAddress? {
        withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 8) { groups -> IPAddress? in
            var count = 0
            var gap = -1  // where `::` stands, as a group index
            var index = 0
            let end = bytes.count
            guard end >= 2 else { return nil }
            if bytes[0] == UInt8(ascii: ":") {
                guard bytes[1] == UInt8(ascii: ":") else { return nil }
                gap = 0
                index = 2
            }
            while index < end {
                let start = index
                var group: UInt32 = 0
                var digits = 0
                while index < end, let nibble = hexValue(bytes[index]) {
                    group = group << 4 | nibble
                    digits += 1
                    index += 1
                    if digits > 4 { return nil }
                }
                if index < end, bytes[index] == UInt8(ascii: ".") {
                    // An IPv4 tail: the last 32 bits, running to the end of the text.
                    guard count <= 6, let v4 = parseIPv4(bytes[start..<end]) else { return nil }
                    groups[count] = UInt16(truncatingIfNeeded: v4 >> 16)
                    groups[count + 1] = UInt16(truncatingIfNeeded: v4)
                    count += 2
                    index = end
                    break
                }
                guard digits > 0, count < 8 else { return nil }
                groups[count] = UInt16(group)
                count += 1
                if index == end { break }
                guard bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                if index < end, bytes[index] == UInt8(ascii: ":") {
                    guard gap < 0 else { return nil }
                    gap = count
                    index += 1
                } else if index == end {
                    return nil  // a single trailing colon
                }
            }
            if gap >= 0 {
                // `::` stands for at least one zero group.
                guard count <= 7 else { return nil }
                let tail = count - gap
                for i in 0..<tail { groups[7 - i] = groups[count - 1 - i] }
                for i in gap..<(8 - tail) { groups[i] = 0 }
            } else {
                guard count == 8 else { return nil }
            }
            var high: UInt64 = 0
            var low: UInt64 = 0
            for i in 0..<4 { high = high << 16 | UInt64(groups[i]) }
            for i in 4..<8 { low = low << 16 | UInt64(groups[i]) }
            return IPAddress(high: high, low: low)
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
