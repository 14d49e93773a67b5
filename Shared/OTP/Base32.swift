/// Base32 with the RFC 4648 §6 alphabet (`A`–`Z`, `2`–`7`), the encoding of shared secrets
/// in otpauth URIs and in the "enter a setup key" screens of authenticator apps.
///
/// Encoding writes upper case without `=` padding, as the Key Uri Format asks. Decoding is
/// strict except for case and padding:
/// - upper and lower case letters are accepted (`mzxw6` and `MZXW6` alike);
/// - the input may be unpadded, or padded with `=` to a multiple of 8 characters exactly as
///   RFC 4648 §6 pads it (so the §10 test vectors decode as printed);
/// - anything else is refused: characters outside the alphabet (including spaces, hyphens and
///   the easily confused `0`, `1`, `8`, `9`), `=` anywhere but the end, a length no encoder
///   produces (1, 3 or 6 characters in the last group), and non-zero trailing bits
///   (RFC 4648 §3.5 lets decoders refuse them), so every byte string has exactly one
///   accepted unpadded encoding.
public enum Base32: Sendable {
    /// The RFC 4648 §6 alphabet.
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Character value per byte, upper and lower case; `0xFF` for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(index)
            if character >= UInt8(ascii: "A"), character <= UInt8(ascii: "Z") {
                table[Int(character + 32)] = UInt8(index)
            }
        }
        return table
    }()

    /// The number of characters in a final group for each count of leftover bytes (0…4);
    /// the lengths that decoding accepts for the last group, and only those.
    private static let charactersForTrailingBytes = [0, 2, 4, 5, 7]

    /// The largest input ``decode(_:)`` accepts, in characters: far more than any OTP secret
    /// (a 128-byte secret is 205 characters), small enough that hostile input costs nothing.
    public static let maximumEncodedLength = 4096

    // MARK: - Encoding

    /// The base32 encoding of `bytes`, upper case, without padding.
    ///
    /// - Parameter bytes: Any bytes, e.g. a shared secret.
    /// - Returns: `ceil(8 * bytes.count / 5)` characters from `A`–`Z` and `2`–`7`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bitCount = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bitCount += 8
            while bitCount >= 5 {
                bitCount -= 5
                out.append(alphabet[Int((buffer >> UInt32(bitCount)) & 0x1F)])
            }
            // Keep only the bits not yet written so the buffer never overflows.
            buffer &= (1 << UInt32(bitCount)) - 1
        }
        if bitCount > 0 {
            // The last character carries the remaining bits followed by zero bits (§6).
            out.append(alphabet[Int((buffer << UInt32(5 - bitCount)) & 0x1F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Decoding

    /// The bytes encoded by `text`.
    ///
    /// - Parameter text: Base32 as described on the type: any case, padded or not.
    /// - Returns: The decoded bytes; empty for empty input.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidBase32`` for a
    ///   character outside the alphabet, misplaced or wrong padding, an impossible length,
    ///   non-zero trailing bits, or input longer than ``maximumEncodedLength``.
    public static func decode(_ text: String) throws -> [UInt8] {
        let input = Array(text.utf8)
        guard input.count <= maximumEncodedLength else {
            throw OTPError(.invalidBase32, "longer than \(maximumEncodedLength) characters")
        }
        let characters = try stripPadding(input)

        var out: [UInt8] = []
        out.reserveCapacity(characters.count * 5 / 8)
        var buffer: UInt32 = 0
        var bitCount = 0
        for (position, character) in characters.enumerated() {
            let value = values[Int(character)]
            guard value != 0xFF else {
                throw OTPError(.invalidBase32, "character outside the base32 alphabet at offset \(position)")
            }
            buffer = (buffer << 5) | UInt32(value)
            bitCount += 5
            if bitCount >= 8 {
                bitCount -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bitCount)))
                buffer &= (1 << UInt32(bitCount)) - 1
            }
        }
        guard charactersForTrailingBytes.contains(characters.count % 8) else {
            throw OTPError(.invalidBase32, "length \(characters.count) is not a base32 length")
        }
        guard buffer == 0 else {
            throw OTPError(.invalidBase32, "non-zero trailing bits")
        }
        return out
    }

    /// The characters of `input` before its padding, after checking that the padding, if
    /// any, is exactly what RFC 4648 §6 would have written.
    private static func stripPadding(_ input: [UInt8]) throws -> ArraySlice<UInt8> {
        let pad = UInt8(ascii: "=")
        guard let firstPad = input.firstIndex(of: pad) else { return input[...] }
        let padCount = input.count - firstPad
        guard input[firstPad...].allSatisfy({ $0 == pad }) else {
            throw OTPError(.invalidBase32, "padding before the end at offset \(firstPad)")
        }
        let dataCount = firstPad
        // Padding fills the last group to 8 characters and is never a whole group.
        guard input.count % 8 == 0, padCount < 8, padCount == (8 - dataCount % 8) % 8, dataCount % 8 != 0 else {
            throw OTPError(.invalidBase32, "\(padCount) padding characters after \(dataCount) characters")
        }
        return input[..<firstPad]
    }
}
