import Crypto
/// HMAC-based one-time passwords (RFC 4226): a code is the dynamic truncation of
/// HMAC(secret, counter) to 6–8 decimal digits.
///
/// RFC 4226 defines HOTP over HMAC-SHA-1; SHA-256 and SHA-512 are offered for ``TOTP``, which
/// is built on this type (RFC 6238 §1.2). Codes are strings so that leading zeros survive
/// (`"062306"`), and presented codes are compared in constant time.
///
/// ```swift
/// let hotp = try HOTP(secret: secret)
/// let counter = try hotp.verify(presented, counter: stored.nextCounter, lookAhead: 3)
/// stored.nextCounter = counter + 1  // RFC 4226 §7.2: never accept this counter again
/// ```
public struct HOTP: Sendable, Hashable {
    /// The shared secret.
    public let secret: OTPSecret
    /// The HMAC hash function.
    public let algorithm: OTPAlgorithm
    /// The number of digits of a code, within ``digitRange``.
    public let digits: Int

    /// The accepted code lengths: RFC 4226 §5.3 asks for at least 6 digits; 8 is the most
    /// RFC 6238's reference implementation and the Key Uri Format use, and 10^8 < 2^31 keeps
    /// the modulus within the 31-bit truncated value.
    public static let digitRange: ClosedRange<Int> = 6...8

    /// The largest ``verify(_:counter:lookAhead:)`` look-ahead accepted. RFC 4226 §7.4 asks
    /// for a small resynchronisation window; every extra counter is one more chance for a
    /// guess (§E.2), so the limit is kept low.
    public static let maximumLookAhead = 20

    /// 10^digits, the modulus of RFC 4226 §5.3 step 3 (`Snum mod 10^Digit`); `digits` is
    /// within ``digitRange``, so the result fits easily.
    private static func modulus(digits: Int) -> UInt32 {
        var result: UInt32 = 1
        for _ in 0..<digits { result *= 10 }
        return result
    }

    /// An HOTP generator and verifier.
    ///
    /// - Parameters:
    ///   - secret: The shared secret.
    ///   - algorithm: The HMAC hash function; RFC 4226 uses ``OTPAlgorithm/sha1``.
    ///   - digits: The code length, within ``digitRange``.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for
    ///   `digits` outside ``digitRange``.
    public init(secret: OTPSecret, algorithm: OTPAlgorithm = .sha1, digits: Int = 6) throws {
        guard Self.digitRange.contains(digits) else { throw OTPError.invalidDigits(digits) }
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
    }

    // MARK: - Generating

    /// The code for `counter`, zero-padded to ``digits`` digits.
    ///
    /// - Parameter counter: The moving factor; RFC 4226 §5.2 feeds it to HMAC as 8 bytes,
    ///   big-endian.
    /// - Returns: A string of exactly ``digits`` ASCII digits.
    public func code(counter: UInt64) -> String {
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let mac = algorithm.hmac(key: secret.bytes, message: message)
        return Self.format(Self.truncate(mac) % Self.modulus(digits: digits), digits: digits)
    }

    /// RFC 4226 §5.3 dynamic truncation: the 31-bit value at the offset given by the low four
    /// bits of the last byte of `mac`.
    ///
    /// For SHA-1 the last byte is `mac[19]`, as in the RFC; RFC 6238's reference
    /// implementation uses the last byte of the longer SHA-256 and SHA-512 MACs in the same
    /// way, so the offset (0…15) always leaves four bytes to read.
    ///
    /// - Parameter mac: An HMAC value of at least 20 bytes.
    /// - Returns: `Snum`, before the reduction modulo 10^digits.
    static func truncate(_ mac: [UInt8]) -> UInt32 {
        precondition(mac.count >= 20, "HMAC output too short for dynamic truncation")
        let offset = Int(mac[mac.count - 1] & 0x0F)
        // Mask the most significant bit to avoid signed/unsigned ambiguity (§5.3).
        return (UInt32(mac[offset] & 0x7F) << 24)
            | (UInt32(mac[offset + 1]) << 16)
            | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
    }

    /// `value` in decimal, left-padded with zeros to `digits` characters.
    static func format(_ value: UInt32, digits: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    // MARK: - Verifying

    /// Checks a presented code against counters `counter`, `counter + 1`, … up to
    /// `counter + lookAhead`, and returns the counter that matched.
    ///
    /// Every counter in the window is computed and compared, in constant time, whether or not
    /// an earlier one matched, so the running time does not tell which one did. If several
    /// match, the lowest counter is returned.
    ///
    /// - Parameters:
    ///   - code: The code as the user typed it: exactly ``digits`` ASCII digits, no spaces.
    ///   - counter: The next counter the server expects (one past the last accepted).
    ///   - lookAhead: How many counters beyond `counter` to try, for an authenticator whose
    ///     button was pressed without a login (RFC 4226 §7.4); 0…``maximumLookAhead``.
    /// - Returns: The counter that matched. Store `counter + 1` as the next expected counter
    ///   so that the code, and every earlier one, cannot be used again (§7.2).
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/malformedCode`` for a code
    ///   that is not ``digits`` ASCII digits, ``OTPError/Code-swift.struct/codeMismatch`` when
    ///   no counter in the window matches, ``OTPError/Code-swift.struct/invalidParameter`` for
    ///   a `lookAhead` out of range.
    public func verify(_ code: String, counter: UInt64, lookAhead: Int = 0) throws -> UInt64 {
        guard (0...Self.maximumLookAhead).contains(lookAhead) else {
            throw OTPError(.invalidParameter, "look-ahead \(lookAhead) outside 0...\(Self.maximumLookAhead)")
        }
        try checkFormat(code)
        var matched: UInt64?
        var candidate = counter
        for step in 0...lookAhead {
            if step > 0 {
                // The counter space ends at UInt64.max; there is nothing past it to try.
                guard candidate < UInt64.max else { break }
                candidate += 1
            }
            let equal = ConstantTime.equals(self.code(counter: candidate), code)
            if equal, matched == nil { matched = candidate }
        }
        guard let matched else { throw OTPError(.codeMismatch, "no counter in the window matched") }
        return matched
    }

    /// Refuses a presented code that is not exactly ``digits`` ASCII digits. The length and
    /// the character set are public, so this check need not be constant-time.
    func checkFormat(_ code: String) throws {
        let utf8 = code.utf8
        guard utf8.count == digits,
            utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw OTPError.malformedCode(expectedDigits: digits) }
    }
}
