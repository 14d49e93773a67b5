import COpenSSL

/// The HMAC hash function of an HOTP or TOTP credential.
///
/// RFC 4226 defines HOTP over HMAC-SHA-1 only; RFC 6238 §1.2 adds HMAC-SHA-256 and
/// HMAC-SHA-512 for TOTP. SHA-1 stays the default because authenticator apps (Google
/// Authenticator among them) ignore or mishandle the others. HMAC-SHA-1 is not weakened by
/// SHA-1's collision attacks: HMAC relies on the compression function being a PRF, which those
/// attacks do not break.
public enum OTPAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// HMAC-SHA-1 (RFC 4226, the default of RFC 6238 and of the Key Uri Format).
    case sha1 = "SHA1"
    /// HMAC-SHA-256 (RFC 6238).
    case sha256 = "SHA256"
    /// HMAC-SHA-512 (RFC 6238).
    case sha512 = "SHA512"

    /// The name used by the `algorithm` parameter of an otpauth URI: `SHA1`, `SHA256`, `SHA512`.
    public var uriName: String { rawValue }

    /// The same as ``uriName``.
    public var description: String { rawValue }

    /// The algorithm named `name` in an otpauth URI, ignoring case (`sha1` and `SHA1` alike);
    /// `nil` for any other name.
    ///
    /// - Parameter name: The value of the URI's `algorithm` parameter.
    public init?(uriName name: String) {
        switch name.uppercased() {
        case "SHA1": self = .sha1
        case "SHA256": self = .sha256
        case "SHA512": self = .sha512
        default: return nil
        }
    }

    /// The length of this algorithm's HMAC output in bytes: 20, 32 or 64.
    public var macByteCount: Int {
        switch self {
        case .sha1: 20
        case .sha256: 32
        case .sha512: 64
        }
    }

    /// The secret length RFC 6238's reference seeds use for this algorithm, which is also the
    /// length ``OTPSecret`` generates by default for SHA-1 (RFC 4226 §4 R6 recommends 160 bits).
    public var recommendedSecretByteCount: Int { macByteCount }

    /// OpenSSL's message digest for this algorithm. The returned object is static in OpenSSL
    /// and must not be freed.
    private var digest: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        }
    }

    /// HMAC of `message` under `key` with this algorithm, through OpenSSL's one-shot `HMAC()`.
    ///
    /// - Parameters:
    ///   - key: The HMAC key; may be any length (keys longer than the hash block are hashed).
    ///   - message: The data to authenticate.
    /// - Returns: ``macByteCount`` bytes.
    /// - Important: Traps if OpenSSL fails, which happens only when it cannot allocate memory
    ///   or its default provider is missing: returning anything else would accept or issue
    ///   codes that are not the credential's.
    func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // HMAC() with a NULL key pointer is allowed only for a zero length; an empty array's
        // base address may be nil, so a one-byte dummy stands in (never read when count is 0).
        let dummy: [UInt8] = [0]
        let result = (key.isEmpty ? dummy : key).withUnsafeBufferPointer { kb in
            message.withUnsafeBufferPointer { mb in
                out.withUnsafeMutableBufferPointer { ob in
                    HMAC(
                        digest, kb.baseAddress, Int32(key.count), mb.baseAddress, mb.count,
                        ob.baseAddress, &length)
                }
            }
        }
        precondition(result != nil && Int(length) == macByteCount, "OpenSSL HMAC(\(rawValue)) failed")
        return Array(out.prefix(Int(length)))
    }
}
