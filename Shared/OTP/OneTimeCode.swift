import Crypto
/// Random numeric codes sent out of band (SMS, e-mail, push), and the keyed hash under which
/// the server stores them.
///
/// A code is drawn from OpenSSL's CSPRNG by rejection sampling, so every value from
/// `000000` to `999999` (for six digits) is equally likely: taking a 32-bit random number
/// modulo 10^6 would favour the low values slightly. The server keeps only
/// `HMAC-SHA-256(key, context || code)`: a leaked table of stored codes cannot be reversed
/// by trying the 10^6 candidates without the key, and the context (e.g. the transaction or
/// challenge id) binds a code to what it was issued for.
///
/// ```swift
/// let code = try OneTimeCode.generate(digits: 6)
/// let stored = try OneTimeCode.storageHash(of: code, key: pepper, context: Array(challengeID.utf8))
/// // … later, with the user's input:
/// try OneTimeCode.verify(input, digits: 6, storedHash: stored, key: pepper, context: Array(challengeID.utf8))
/// ```
///
/// - Important: A 6-digit code has 10^6 values; limit the attempts per code (three to five)
///   and its lifetime (minutes), and delete the stored hash once it has been used.
public enum OneTimeCode: Sendable {
    /// The accepted code lengths.
    public static let digitRange: ClosedRange<Int> = 6...8

    /// The shortest storage key accepted, in bytes (128 bits); 32 random bytes are
    /// recommended.
    public static let minimumKeyByteCount = 16

    /// The length of a storage hash in bytes (HMAC-SHA-256).
    public static let hashByteCount = 32

    // MARK: - Generating

    /// A new random code of `digits` decimal digits, zero-padded (`"004217"` is a valid
    /// six-digit code).
    ///
    /// - Parameter digits: The length, within ``digitRange``.
    /// - Returns: Exactly `digits` ASCII digits, uniformly distributed.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for
    ///   `digits` outside ``digitRange``.
    /// - Important: Traps if OpenSSL's CSPRNG fails: continuing without randomness would
    ///   issue guessable codes.
    public static func generate(digits: Int = 6) throws -> String {
        guard digitRange.contains(digits) else { throw OTPError.invalidDigits(digits) }
        var bound: UInt64 = 1
        for _ in 0..<digits { bound *= 10 }
        return HOTP.format(UInt32(uniformRandom(below: bound)), digits: digits)
    }

    /// A uniformly distributed number in `0..<bound`, by rejection sampling over 32-bit
    /// draws from the CSPRNG.
    ///
    /// Of the 2^32 possible draws, the top `2^32 mod bound` would make the low results more
    /// likely if reduced modulo `bound`; they are drawn again instead. For `bound` = 10^6
    /// that happens with probability under 0.03 %, so the loop ends after one draw almost
    /// always.
    ///
    /// - Parameter bound: The exclusive upper limit, 1…2^32.
    static func uniformRandom(below bound: UInt64) -> UInt64 {
        precondition(bound > 0 && bound <= 1 << 32, "bound out of range")
        let space: UInt64 = 1 << 32
        // The largest multiple of `bound` that fits in the 32-bit space.
        let limit = space - space % bound
        while true {
            let bytes = OTPSecret.randomBytes(4)
            let draw = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if draw < limit { return draw % bound }
        }
    }

    // MARK: - Storing and checking

    /// The value to store for `code`: `HMAC-SHA-256(key, context || code)`.
    ///
    /// - Parameters:
    ///   - code: The code as generated.
    ///   - key: A server-side key (a "pepper") of at least ``minimumKeyByteCount`` bytes,
    ///     kept apart from the database that stores the hashes.
    ///   - context: What the code was issued for, e.g. the UTF-8 of a challenge id. Use a
    ///     context of fixed length or with a terminator: the concatenation has no separator,
    ///     so contexts `"tx-1"` and `"tx-12"` with codes of different lengths could collide.
    /// - Returns: ``hashByteCount`` bytes.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidKey`` for a key
    ///   shorter than ``minimumKeyByteCount``.
    public static func storageHash(of code: String, key: [UInt8], context: [UInt8]) throws -> [UInt8] {
        guard key.count >= minimumKeyByteCount else {
            throw OTPError(.invalidKey, "storage key of \(key.count) bytes, at least \(minimumKeyByteCount) required")
        }
        return OTPAlgorithm.sha256.hmac(key: key, message: context + Array(code.utf8))
    }

    /// Checks a presented code against a stored hash, comparing the hashes in constant time.
    ///
    /// - Parameters:
    ///   - presented: The code as the user typed it: exactly `digits` ASCII digits.
    ///   - digits: The length of the code that was issued, within ``digitRange``.
    ///   - storedHash: The value ``storageHash(of:key:context:)`` returned when it was issued.
    ///   - key: The same storage key.
    ///   - context: The same context.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/malformedCode`` for a code
    ///   that is not `digits` ASCII digits, ``OTPError/Code-swift.struct/codeMismatch`` for a
    ///   code that does not match, ``OTPError/Code-swift.struct/invalidKey`` for a short key,
    ///   and ``OTPError/Code-swift.struct/invalidParameter`` for `digits` out of range.
    public static func verify(
        _ presented: String, digits: Int, storedHash: [UInt8], key: [UInt8], context: [UInt8]
    ) throws {
        guard digitRange.contains(digits) else { throw OTPError.invalidDigits(digits) }
        let utf8 = presented.utf8
        guard utf8.count == digits, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw OTPError.malformedCode(expectedDigits: digits)
        }
        let hash = try storageHash(of: presented, key: key, context: context)
        guard ConstantTime.equals(hash, storedHash) else {
            throw OTPError(.codeMismatch, "code does not match the stored hash")
        }
    }

    /// Whether a presented code matches a stored hash: ``verify(_:digits:storedHash:key:context:)``
    /// with every refusal folded into `false`, for callers that do not report why.
    ///
    /// - Parameters: As for ``verify(_:digits:storedHash:key:context:)``.
    /// - Returns: `true` only for a well-formed code whose hash equals `storedHash`.
    public static func matches(
        _ presented: String, digits: Int, storedHash: [UInt8], key: [UInt8], context: [UInt8]
    ) -> Bool {
        (try? verify(presented, digits: digits, storedHash: storedHash, key: key, context: context)) != nil
    }

    /// ``matches(_:digits:storedHash:key:context:)`` under any of `keys` (the storage key and
    /// those still accepted while it is being changed): a code hashed under an earlier key
    /// stays good until it expires.
    public static func matches(
        _ presented: String, digits: Int, storedHash: [UInt8], keys: [[UInt8]], context: [UInt8]
    ) -> Bool {
        keys.contains { matches(presented, digits: digits, storedHash: storedHash, key: $0, context: context) }
    }
}
