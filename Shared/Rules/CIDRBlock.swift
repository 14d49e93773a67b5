/// A block of IP addresses written `address/prefix`: `10.0.0.0/8`, `2001:db8::/32`, `0.0.0.0/0`.
///
/// IPv4 blocks live in the IPv4-mapped part of the one 128-bit space of ``IPAddress``:
/// `10.0.0.0/8` is `::ffff:10.0.0.0/104`. So an IPv4 block matches IPv4 addresses and their
/// IPv4-mapped IPv6 forms alike, and never a native IPv6 address; an IPv6 block written over
/// mapped space (`::ffff:0:0/96`) matches IPv4 addresses, and `::/0` matches every address.
///
/// Parsing is strict: the prefix length is required (0–32 for IPv4, 0–128 for IPv6, decimal
/// without leading zeros) and the address must have no bits set past the prefix, so that
/// `192.168.1.1/16` (meant as `192.168.0.0/16`? or `192.168.1.0/24`?) is refused rather than
/// guessed at.
public struct CIDRBlock: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the block.
    public let network: IPAddress
    /// The prefix length as written: 0–32 for an IPv4 block, 0–128 for an IPv6 block.
    public let prefixLength: Int
    /// Whether the block was written as IPv4.
    public let isIPv4: Bool
    private let maskHigh: UInt64
    private let maskLow: UInt64

    /// The block written in `text`, or `nil` when it is not a valid block.
    ///
    /// - Parameter text: `address/prefix`, e.g. `192.0.2.0/24` or `2001:db8::/32`.
    public init?(_ text: String) {
        guard case .success(let block) = Self.parse(text) else { return nil }
        self = block
    }

    /// Whether `address` is in the block.
    public func contains(_ address: IPAddress) -> Bool {
        masked.contains(address)
    }

    /// The block as the evaluation tables hold it.
    var masked: AddressBlock {
        AddressBlock(networkHigh: network.high, networkLow: network.low, maskHigh: maskHigh, maskLow: maskLow)
    }

    /// `address/prefix` in canonical form: `10.0.0.0/8`, `2001:db8::/32`, `::ffff:0.0.0.0/96`.
    public var description: String {
        // An IPv6 block over mapped space keeps its IPv6 form (RFC 5952 §5).
        let address = !isIPv4 && network.isIPv4 ? "::ffff:\(network)" : network.description
        return "\(address)/\(prefixLength)"
    }

    // MARK: - Parsing

    private init(network: IPAddress, prefixLength: Int, isIPv4: Bool, maskHigh: UInt64, maskLow: UInt64) {
        self.network = network
        self.prefixLength = prefixLength
        self.isIPv4 = isIPv4
        self.maskHigh = maskHigh
        self.maskLow = maskLow
    }

    /// The block written in `text`, or why it is not one, for a message.
    static func parse(_ text: String) -> Result<CIDRBlock, CIDRProblem> {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            return .failure(CIDRProblem("is not address/prefix, e.g. 10.0.0.0/8 or 2001:db8::/32"))
        }
        let addressText = String(parts[0])
        let isIPv4 = !addressText.contains(":")
        guard let address = IPAddress(addressText) else {
            return .failure(CIDRProblem("has an address that is not an IPv4 or IPv6 address"))
        }
        let limit = isIPv4 ? 32 : 128
        let lengthText = parts[1].utf8
        guard !lengthText.isEmpty, lengthText.count <= 3, lengthText.allSatisfy(\.isASCIIDigit),
            lengthText.count == 1 || lengthText.first != UInt8(ascii: "0"),
            let written = Int(parts[1]), written <= limit
        else {
            return .failure(CIDRProblem("has a prefix length that is not a number from 0 to \(limit)"))
        }
        // In the 128-bit space an IPv4 prefix sits under the 96 bits of `::ffff:0:0/96`.
        let bits = isIPv4 ? 96 + written : written
        let maskHigh: UInt64 = bits >= 64 ? .max : (bits == 0 ? 0 : .max << UInt64(64 - bits))
        let maskLow: UInt64 = bits <= 64 ? 0 : (bits == 128 ? .max : .max << UInt64(128 - bits))
        guard address.high & ~maskHigh == 0, address.low & ~maskLow == 0 else {
            return .failure(
                CIDRProblem("has bits set after the prefix; the block starts at \(Self.network(address, maskHigh, maskLow))/\(written)"))
        }
        return .success(
            CIDRBlock(network: address, prefixLength: written, isIPv4: isIPv4, maskHigh: maskHigh, maskLow: maskLow))
    }

    private static func network(_ address: IPAddress, _ maskHigh: UInt64, _ maskLow: UInt64) -> IPAddress {
        IPAddress(high: address.high & maskHigh, low: address.low & maskLow)
    }
}

/// A CIDR block as masks over the 128-bit space, bitwise-copyable for the evaluation tables.
struct AddressBlock: Sendable, BitwiseCopyable {
    /// The first 64 bits of the block's first address.
    let networkHigh: UInt64
    /// The last 64 bits of the block's first address.
    let networkLow: UInt64
    /// The prefix's bits among the first 64.
    let maskHigh: UInt64
    /// The prefix's bits among the last 64.
    let maskLow: UInt64

    /// Whether `address` is in the block.
    @inline(__always)
    func contains(_ address: IPAddress) -> Bool {
        address.high & maskHigh == networkHigh && address.low & maskLow == networkLow
    }
}

/// What is wrong with a CIDR block's text, completing "the CIDR block …".
struct CIDRProblem: Error, Sendable {
    /// The end of the sentence, e.g. "has a prefix length that is not a number from 0 to 32".
    let reason: String

    /// A problem; `reason` completes "the CIDR block …".
    init(_ reason: String) { self.reason = reason }
}
