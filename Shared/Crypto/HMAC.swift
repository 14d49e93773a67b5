import COpenSSL

/// HMAC (RFC 2104) through OpenSSL's one-shot `HMAC()`: the one implementation the one-time
/// passwords (RFC 4226/6238), code hashes and any other keyed digest use.
public enum HMAC {
    /// The hash function under the HMAC.
    public enum Algorithm: Sendable {
        case sha1, sha256, sha512

        /// The length of the MAC in bytes: 20, 32 or 64.
        public var byteCount: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            case .sha512: 64
            }
        }

        /// OpenSSL's message digest (static in OpenSSL; never freed).
        var digest: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            case .sha512: EVP_sha512()
            }
        }
    }

    /// The HMAC of `message` under `key`.
    ///
    /// - Parameters:
    ///   - key: any length (keys longer than the hash block are hashed first, per RFC 2104).
    ///   - message: the data to authenticate.
    /// - Returns: ``Algorithm/byteCount`` bytes.
    /// - Important: Traps if OpenSSL fails, which happens only when it cannot allocate memory or
    ///   its default provider is missing: returning anything else would accept or issue codes
    ///   that are not the key holder's.
    public static func authenticationCode(_ algorithm: Algorithm, key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // HMAC() with a NULL key pointer is allowed only for a zero length; an empty array's
        // base address may be nil, so a one-byte dummy stands in (never read when count is 0).
        let dummy: [UInt8] = [0]
        let result = (key.isEmpty ? dummy : key).withUnsafeBufferPointer { kb in
            message.withUnsafeBufferPointer { mb in
                out.withUnsafeMutableBufferPointer { ob in
                    COpenSSL.HMAC(algorithm.digest, kb.baseAddress, Int32(key.count), mb.baseAddress, mb.count, ob.baseAddress, &length)
                }
            }
        }
        precondition(result != nil && Int(length) == algorithm.byteCount, "OpenSSL HMAC failed")
        return Array(out.prefix(Int(length)))
    }
}
