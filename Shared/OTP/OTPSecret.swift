import Crypto

/// The shared secret of an HOTP or TOTP credential: the HMAC key that the server and the
/// authenticator hold.
///
/// A new secret comes from OpenSSL's CSPRNG (`RAND_bytes`), 20 bytes (160 bits) by default as
/// RFC 4226 §4 R6 recommends; authenticator apps receive it as unpadded upper-case base32 in an
/// otpauth URI (``base32``). Existing secrets are taken from bytes or base32 within
/// ``byteCountRange``.
///
/// - Important: The secret is key material. `description` and `debugDescription` print only
///   its length; equality is decided in constant time. Store it encrypted (the Crypto module's
///   `AES256GCM`), never in logs, events or error details.
public struct OTPSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key bytes.
    public let bytes: [UInt8]

    /// The length a new secret has unless asked otherwise: 160 bits (RFC 4226 §4 R6).
    public static let defaultByteCount = 20

    /// The lengths accepted, in bytes.
    ///
    /// At least 16 bytes because RFC 4226 §4 R6 says the secret MUST be at least 128 bits;
    /// this refuses the 80-bit secrets that some older enrolments used. At most 128 bytes,
    /// the SHA-512 block size, beyond which HMAC hashes the key first and gains nothing.
    public static let byteCountRange: ClosedRange<Int> = 16...128

    // MARK: - Creating secrets

    /// A new random secret of ``defaultByteCount`` bytes.
    ///
    /// - Important: Traps if OpenSSL's CSPRNG fails: continuing without randomness would
    ///   issue guessable secrets.
    public init() {
        self.bytes = Self.randomBytes(Self.defaultByteCount)
    }

    /// A new random secret of `byteCount` bytes, e.g. 32 for a SHA-256 credential or 64 for
    /// SHA-512 (``OTPAlgorithm/recommendedSecretByteCount``).
    ///
    /// - Parameter byteCount: The length in bytes, within ``byteCountRange``.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidSecret`` for a
    ///   length outside ``byteCountRange``.
    /// - Important: Traps if OpenSSL's CSPRNG fails.
    public init(randomByteCount byteCount: Int) throws {
        try Self.checkLength(byteCount)
        self.bytes = Self.randomBytes(byteCount)
    }

    /// An existing secret from its bytes.
    ///
    /// - Parameter bytes: The key, within ``byteCountRange``.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidSecret`` for a
    ///   length outside ``byteCountRange``.
    public init(bytes: [UInt8]) throws {
        try Self.checkLength(bytes.count)
        self.bytes = bytes
    }

    /// An existing secret from its base32 form, as an otpauth URI or a setup screen shows it.
    ///
    /// - Parameter base32: RFC 4648 base32, any case, padded or not (see ``Base32``).
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidBase32`` for text
    ///   that is not base32, or ``OTPError/Code-swift.struct/invalidSecret`` for a decoded
    ///   length outside ``byteCountRange``.
    public init(base32: String) throws {
        try self.init(bytes: Base32.decode(base32))
    }

    // MARK: - Reading secrets

    /// The secret as unpadded upper-case base32, the form of the otpauth URI's `secret`
    /// parameter.
    public var base32: String { Base32.encode(bytes) }

    /// The length in bytes.
    public var byteCount: Int { bytes.count }

    /// `OTPSecret(20 bytes)`: the length only, never the key.
    public var description: String { "OTPSecret(\(bytes.count) bytes)" }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// Whether two secrets are the same key, compared in constant time.
    public static func == (lhs: OTPSecret, rhs: OTPSecret) -> Bool {
        ConstantTime.equals(lhs.bytes, rhs.bytes)
    }

    /// Hashes the length only, so that a hash table of secrets does not hash key material
    /// with a non-cryptographic hash; equal secrets still hash alike.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
    }

    // MARK: - Private

    private static func checkLength(_ byteCount: Int) throws {
        guard byteCountRange.contains(byteCount) else {
            throw OTPError(
                .invalidSecret,
                "secret of \(byteCount) bytes outside \(byteCountRange.lowerBound)...\(byteCountRange.upperBound)")
        }
    }

    /// `count` bytes from OpenSSL's CSPRNG (Crypto's ``SecureRandom``); traps if it fails.
    static func randomBytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
}
