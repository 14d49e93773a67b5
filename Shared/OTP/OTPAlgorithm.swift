import Crypto

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

    /// Crypto's HMAC algorithm of the same hash.
    private var hmacAlgorithm: HMAC.Algorithm {
        switch self {
        case .sha1: .sha1
        case .sha256: .sha256
        case .sha512: .sha512
        }
    }

    /// HMAC of `message` under `key` with this algorithm (Crypto's ``HMAC``).
    ///
    /// - Returns: ``macByteCount`` bytes.
    func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        HMAC.authenticationCode(hmacAlgorithm, key: key, message: message)
    }
}
