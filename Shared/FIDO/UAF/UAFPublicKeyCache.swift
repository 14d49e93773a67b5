import Platform

/// Parsed UAF public keys (a ``PublicKey`` each: an `EC_KEY` on the curve's shared group for
/// EC keys, an `EVP_PKEY` for the others), keyed by what they were parsed from: the key's
/// bytes, its encoding and the signature algorithm.
///
/// When this cache was added, building a key went through `d2i_PUBKEY` and OpenSSL 3's
/// decoders, several times the cost of the verification (a P-256 UAF verification at 18.8 % of
/// `openssl speed ecdsap256` when every call parsed the key). Keys are now built from their
/// point or parts (about 4 µs for P-256 against an 83 µs verification), so a miss costs little;
/// compressed points and `ECC_X962_DER` keys on explicit curves still take the decoders.
///
/// - Important: The cache answers only "what key do these bytes encode", never "may this key
///   be used": whether a registration is active, suspended, deleted or a suspected clone is
///   the caller's, read from its store on every request before the verifier runs (a suspended
///   key never reaches ``UAFAuthenticationVerifier``). Because the entry's key is the whole
///   encoding, a KeyID registered again with another public key can never be answered with
///   the old one.
///
/// Bounded: two generations of at most ``capacity`` entries each. A hit in the older
/// generation moves the entry to the current one; when the current generation is full it
/// becomes the older one and the oldest is dropped. Keys used recently therefore survive a
/// turnover, as with an LRU, without keeping an order per access.
public final class UAFPublicKeyCache: Sendable {
    /// The process's cache, used by the verifiers unless they are given another.
    public static let shared = UAFPublicKeyCache()

    private struct Key: Hashable {
        let bytes: [UInt8]
        let encoding: UInt16
        let algorithm: UInt16

        // The bytes hashed as one block: `[UInt8]`'s own hashing combines byte by byte.
        func hash(into hasher: inout Hasher) {
            hasher.combine(encoding)
            hasher.combine(algorithm)
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private struct Generations {
        var current: [Key: UAFPublicKey] = [:]
        var previous: [Key: UAFPublicKey] = [:]
    }

    /// Read by every UAF verification on any thread: a `PlainLock` held for a dictionary
    /// lookup, as on the rest of the request path (an actor hop would cost more than the
    /// lookup; see `RateLimiter` for that figure). Parsing happens outside the lock.
    private let generations = PlainLock(Generations())
    /// Entries per generation.
    public let capacity: Int

    /// - Parameter capacity: entries per generation (at most twice this are kept).
    public init(capacity: Int = 50_000) {
        precondition(capacity > 0, "a cache holds at least one key")
        self.capacity = capacity
    }

    /// The key encoded by `bytes`, parsed once and then served from the cache.
    ///
    /// - Throws: what ``UAFPublicKey/init(bytes:encoding:algorithm:)`` throws (failures are
    ///   not cached: a malformed key is refused again, at the cost of parsing it again).
    public func key(bytes: [UInt8], encoding: UAFKeyEncoding, algorithm: UAFSignatureAlgorithm) throws(UAFError) -> UAFPublicKey {
        let key = Key(bytes: bytes, encoding: encoding.rawValue, algorithm: algorithm.rawValue)
        let cached: UAFPublicKey? = generations.withLock { g in
            if let hit = g.current[key] { return hit }
            guard let hit = g.previous.removeValue(forKey: key) else { return nil }
            Self.insert(hit, for: key, into: &g, capacity: capacity)
            return hit
        }
        if let cached { return cached }
        let parsed = try UAFPublicKey(bytes: bytes, encoding: encoding, algorithm: algorithm)
        generations.withLock { Self.insert(parsed, for: key, into: &$0, capacity: capacity) }
        return parsed
    }

    /// The key of a stored registration.
    public func key(for record: UAFRegistrationRecord) throws(UAFError) -> UAFPublicKey {
        try key(bytes: record.publicKey, encoding: record.keyEncoding, algorithm: record.signatureAlgorithm)
    }

    /// How many parsed keys are held (both generations).
    public var count: Int { generations.withLock { $0.current.count + $0.previous.count } }

    /// Drops every entry.
    public func removeAll() { generations.withLock { $0 = Generations() } }

    private static func insert(_ value: UAFPublicKey, for key: Key, into g: inout Generations, capacity: Int) {
        if g.current.count >= capacity, g.current[key] == nil {
            g.previous = g.current
            g.current = [:]
        }
        g.current[key] = value
    }
}
