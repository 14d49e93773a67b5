/// A strict, bounded CBOR decoder (RFC 8949) for data that comes from authenticators and
/// clients, i.e. from attackers.
///
/// It never traps on any input: every read is bounds-checked, every length is compared with
/// what is left of the input before anything is allocated, and nesting, item count and string
/// lengths are capped by ``Limits``. By default it refuses:
/// - indefinite-length strings, arrays and maps (``allowsIndefiniteLength``);
/// - integers, lengths and tags not in their shortest form (``requiresMinimalEncoding``). CTAP2
///   canonical CBOR, which authenticators must emit, is always minimal, and accepting two
///   encodings of one value would let a map hold "different" keys that are the same key;
/// - duplicate map keys (always);
/// - text that is not UTF-8, reserved additional-information values, two-byte simple values
///   below 32 and stray "break" codes (always: these are not well-formed);
/// - bytes after the top-level item, unless decoded with ``decodePrefix(_:from:)``.
///
/// It does not require canonical key order, and it does not interpret tags.
public struct CBORDecoder: Sendable {
    /// Caps on what one decode may consume.
    public struct Limits: Sendable, Hashable {
        /// Deepest nesting of arrays, maps and tags; a top-level scalar is depth 1.
        public var maxDepth: Int
        /// Most data items (every scalar, string, array, map and tag counts once).
        public var maxItems: Int
        /// Longest byte or text string, in bytes.
        public var maxStringLength: Int
        /// Most elements of one array, or entries of one map.
        public var maxCollectionCount: Int
        /// Longest input accepted at all, in bytes.
        public var maxInputLength: Int

        public init(
            maxDepth: Int = 16, maxItems: Int = 4096, maxStringLength: Int = 65_536,
            maxCollectionCount: Int = 1024, maxInputLength: Int = 262_144
        ) {
            self.maxDepth = maxDepth
            self.maxItems = maxItems
            self.maxStringLength = maxStringLength
            self.maxCollectionCount = maxCollectionCount
            self.maxInputLength = maxInputLength
        }

        /// Enough for attestation objects with certificate chains and post-quantum keys.
        public static let `default` = Limits()
    }

    public var limits: Limits
    /// Whether indefinite-length strings, arrays and maps are accepted. Default: no.
    public var allowsIndefiniteLength: Bool
    /// Whether integers, lengths and tags must use their shortest encoding. Default: yes.
    public var requiresMinimalEncoding: Bool

    public init(limits: Limits = .default, allowsIndefiniteLength: Bool = false, requiresMinimalEncoding: Bool = true) {
        self.limits = limits
        self.allowsIndefiniteLength = allowsIndefiniteLength
        self.requiresMinimalEncoding = requiresMinimalEncoding
    }

    /// Decodes `bytes`, which must hold exactly one data item.
    ///
    /// - Throws: ``CBORError`` (``CBORError/Code/trailingBytes`` if anything follows the item).
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        let (value, consumed) = try decodePrefix(bytes, from: 0)
        guard consumed == bytes.count else { throw CBORError(.trailingBytes, at: consumed) }
        return value
    }

    /// Decodes the one data item that starts at `start` and may be followed by other bytes.
    ///
    /// Needed for authenticator data, where the credential public key is followed by the
    /// extensions map with no length prefix.
    ///
    /// - Returns: The item and the number of bytes it took, counted from `start`.
    /// - Throws: ``CBORError`` with offsets relative to the start of `bytes`.
    public func decodePrefix(_ bytes: [UInt8], from start: Int = 0) throws(CBORError) -> (value: CBORValue, consumed: Int) {
        guard start >= 0, start <= bytes.count else { throw CBORError(.truncated, at: 0) }
        guard bytes.count - start <= limits.maxInputLength else { throw CBORError(.inputTooLarge, at: start) }
        var reader = Reader(bytes: bytes, position: start, decoder: self)
        let value = try reader.item(depth: 1)
        return (value, reader.position - start)
    }
}

// MARK: - Reader

extension CBORDecoder {
    /// The decoding state of one call. Every index into `bytes` is checked against its count first.
    fileprivate struct Reader {
        let bytes: [UInt8]
        var position: Int
        let decoder: CBORDecoder
        var items = 0

        init(bytes: [UInt8], position: Int, decoder: CBORDecoder) {
            self.bytes = bytes
            self.position = position
            self.decoder = decoder
        }

        var remaining: Int { bytes.count - position }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard position < bytes.count else { throw CBORError(.truncated, at: position) }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func take(_ count: Int) throws(CBORError) -> [UInt8] {
            guard count >= 0, count <= remaining else { throw CBORError(.truncated, at: position) }
            defer { position += count }
            return Array(bytes[position..<(position + count)])
        }

        mutating func uint(byteCount: Int) throws(CBORError) -> UInt64 {
            guard byteCount <= remaining else { throw CBORError(.truncated, at: position) }
            var v: UInt64 = 0
            for _ in 0..<byteCount { v = v << 8 | UInt64(bytes[position]); position += 1 }
            return v
        }

        /// The argument of a head whose additional information is `info` (0–27); nil for 31
        /// (indefinite length). Checks shortest form when the decoder requires it.
        mutating func argument(_ info: UInt8, headAt start: Int) throws(CBORError) -> UInt64? {
            let value: UInt64
            switch info {
            case 0..<24: return UInt64(info)
            case 24:
                value = try uint(byteCount: 1)
                if decoder.requiresMinimalEncoding, value < 24 { throw CBORError(.nonMinimalEncoding, at: start) }
            case 25:
                value = try uint(byteCount: 2)
                if decoder.requiresMinimalEncoding, value <= 0xFF { throw CBORError(.nonMinimalEncoding, at: start) }
            case 26:
                value = try uint(byteCount: 4)
                if decoder.requiresMinimalEncoding, value <= 0xFFFF { throw CBORError(.nonMinimalEncoding, at: start) }
            case 27:
                value = try uint(byteCount: 8)
                if decoder.requiresMinimalEncoding, value <= 0xFFFF_FFFF { throw CBORError(.nonMinimalEncoding, at: start) }
            case 31: return nil
            default: throw CBORError(.reservedAdditionalInfo, at: start)
            }
            return value
        }

        /// A length or count, refused when over `limit` or over what the rest of the input can hold
        /// (`minimumBytesEach` bytes per element) — before anything is allocated for it.
        func length(_ argument: UInt64, limit: Int, minimumBytesEach: Int, at start: Int) throws(CBORError) -> Int {
            guard argument <= UInt64(limit) else { throw CBORError(.lengthExceeded, at: start) }
            let n = Int(argument)
            guard n <= remaining / minimumBytesEach else { throw CBORError(.truncated, at: start) }
            return n
        }

        mutating func countItem(at start: Int) throws(CBORError) {
            items += 1
            guard items <= decoder.limits.maxItems else { throw CBORError(.tooManyItems, at: start) }
        }

        /// Whether the next byte is a "break"; consumes it if so.
        mutating func consumeBreak() throws(CBORError) -> Bool {
            guard position < bytes.count else { throw CBORError(.truncated, at: position) }
            if bytes[position] == 0xFF {
                position += 1
                return true
            }
            return false
        }

        // MARK: Items

        mutating func item(depth: Int) throws(CBORError) -> CBORValue {
            let start = position
            guard depth <= decoder.limits.maxDepth else { throw CBORError(.depthExceeded, at: start) }
            try countItem(at: start)
            let initial = try byte()
            let major = initial >> 5
            let info = initial & 0x1F

            if major == 7 { return try simpleOrFloat(info, at: start) }

            let arg = try argument(info, headAt: start)
            switch major {
            case 0:
                guard let arg else { throw CBORError(.reservedAdditionalInfo, at: start) }
                return .unsigned(arg)
            case 1:
                guard let arg else { throw CBORError(.reservedAdditionalInfo, at: start) }
                return .negative(arg)
            case 2:
                return .bytes(try string(major: 2, argument: arg, at: start))
            case 3:
                let raw = try string(major: 3, argument: arg, at: start)
                guard let text = String(validating: raw, as: UTF8.self) else { throw CBORError(.invalidUTF8, at: start) }
                return .text(text)
            case 4:
                return .array(try array(argument: arg, depth: depth, at: start))
            case 5:
                return .map(try map(argument: arg, depth: depth, at: start))
            default:  // 6
                guard let tag = arg else { throw CBORError(.reservedAdditionalInfo, at: start) }
                let content = try item(depth: depth + 1)
                return .tagged(tag, content)
            }
        }

        mutating func string(major: UInt8, argument arg: UInt64?, at start: Int) throws(CBORError) -> [UInt8] {
            let limit = decoder.limits.maxStringLength
            if let arg {
                return try take(length(arg, limit: limit, minimumBytesEach: 1, at: start))
            }
            guard decoder.allowsIndefiniteLength else { throw CBORError(.indefiniteLengthNotAllowed, at: start) }
            // RFC 8949 §3.2.3: a sequence of definite-length chunks of the same major type,
            // ended by "break". Text chunks must each be valid UTF-8 (checked by the caller on
            // the whole, and here chunk by chunk so that no character is split across chunks).
            var out: [UInt8] = []
            while try !consumeBreak() {
                let chunkStart = position
                try countItem(at: chunkStart)
                let head = try byte()
                guard head >> 5 == major, head & 0x1F != 31 else { throw CBORError(.invalidIndefiniteChunk, at: chunkStart) }
                guard let chunkLength = try argument(head & 0x1F, headAt: chunkStart) else {
                    throw CBORError(.invalidIndefiniteChunk, at: chunkStart)
                }
                let chunk = try take(length(chunkLength, limit: limit - out.count, minimumBytesEach: 1, at: chunkStart))
                if major == 3, String(validating: chunk, as: UTF8.self) == nil { throw CBORError(.invalidUTF8, at: chunkStart) }
                out += chunk
            }
            return out
        }

        mutating func array(argument arg: UInt64?, depth: Int, at start: Int) throws(CBORError) -> [CBORValue] {
            let limit = decoder.limits.maxCollectionCount
            var elements: [CBORValue] = []
            if let arg {
                let count = try length(arg, limit: limit, minimumBytesEach: 1, at: start)
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
                return elements
            }
            guard decoder.allowsIndefiniteLength else { throw CBORError(.indefiniteLengthNotAllowed, at: start) }
            while try !consumeBreak() {
                guard elements.count < limit else { throw CBORError(.lengthExceeded, at: start) }
                elements.append(try item(depth: depth + 1))
            }
            return elements
        }

        mutating func map(argument arg: UInt64?, depth: Int, at start: Int) throws(CBORError) -> [(key: CBORValue, value: CBORValue)] {
            let limit = decoder.limits.maxCollectionCount
            var entries: [(key: CBORValue, value: CBORValue)] = []
            var keys = Set<CBORValue>()
            func add(_ reader: inout Reader) throws(CBORError) {
                let keyStart = reader.position
                let key = try reader.item(depth: depth + 1)
                guard keys.insert(key).inserted else { throw CBORError(.duplicateMapKey, at: keyStart) }
                let value = try reader.item(depth: depth + 1)
                entries.append((key: key, value: value))
            }
            if let arg {
                let count = try length(arg, limit: limit, minimumBytesEach: 2, at: start)
                entries.reserveCapacity(count)
                for _ in 0..<count { try add(&self) }
                return entries
            }
            guard decoder.allowsIndefiniteLength else { throw CBORError(.indefiniteLengthNotAllowed, at: start) }
            while try !consumeBreak() {
                guard entries.count < limit else { throw CBORError(.lengthExceeded, at: start) }
                try add(&self)
            }
            return entries
        }

        mutating func simpleOrFloat(_ info: UInt8, at start: Int) throws(CBORError) -> CBORValue {
            switch info {
            case 0..<20: return .simple(info)
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 24:
                let v = try byte()
                guard v >= 32 else { throw CBORError(.invalidSimpleValue, at: start) }
                return .simple(v)
            case 25: return .float(Self.halfToDouble(UInt16(try uint(byteCount: 2))))
            case 26: return .float(Double(Float(bitPattern: UInt32(try uint(byteCount: 4)))))
            case 27: return .float(Double(bitPattern: try uint(byteCount: 8)))
            case 31: throw CBORError(.unexpectedBreak, at: start)
            default: throw CBORError(.reservedAdditionalInfo, at: start)
            }
        }

        /// IEEE 754 binary16 → Double (RFC 8949 Appendix D), without relying on `Float16`.
        static func halfToDouble(_ half: UInt16) -> Double {
            let sign: FloatingPointSign = half & 0x8000 != 0 ? .minus : .plus
            let exponent = Int((half >> 10) & 0x1F)
            let mantissa = Double(half & 0x3FF)
            switch exponent {
            case 0: return Double(sign: sign, exponent: -24, significand: mantissa)
            case 31: return mantissa == 0 ? (sign == .minus ? -.infinity : .infinity) : .nan
            default: return Double(sign: sign, exponent: exponent - 25, significand: mantissa + 1024)
            }
        }
    }
}
