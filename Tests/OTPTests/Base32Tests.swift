import Testing
@testable import OTP

/// One RFC 4648 §10 test vector: the text and its padded base32 encoding.
struct Base32Vector: Sendable, CustomTestStringConvertible {
    let text: String
    let padded: String

    /// The encoding without `=`, as ``Base32/encode(_:)`` writes it.
    var unpadded: String { String(padded.prefix { $0 != "=" }) }

    var testDescription: String { "BASE32(\"\(text)\")" }

    static let rfc4648: [Base32Vector] = [
        .init(text: "", padded: ""),
        .init(text: "f", padded: "MY======"),
        .init(text: "fo", padded: "MZXQ===="),
        .init(text: "foo", padded: "MZXW6==="),
        .init(text: "foob", padded: "MZXW6YQ="),
        .init(text: "fooba", padded: "MZXW6YTB"),
        .init(text: "foobar", padded: "MZXW6YTBOI======"),
    ]
}

/// RFC 4648 base32: the §10 vectors, round trips and every refusal.
@Suite struct Base32Tests {
    @Test(arguments: Base32Vector.rfc4648)
    func rfc4648Section10(_ vector: Base32Vector) throws {
        let bytes = Array(vector.text.utf8)
        #expect(Base32.encode(bytes) == vector.unpadded)
        #expect(try Base32.decode(vector.padded) == bytes)
        #expect(try Base32.decode(vector.unpadded) == bytes)
        #expect(try Base32.decode(vector.unpadded.lowercased()) == bytes)
        #expect(try Base32.decode(vector.padded.lowercased()) == bytes)
    }

    @Test func roundTripsEveryLengthAndByte() throws {
        // Lengths 0...70 cover every remainder modulo 5 many times; the content walks all
        // byte values.
        for length in 0...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + length * 11) }
            let encoded = Base32.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(encoded.utf8.count == (length * 8 + 4) / 5)
            #expect(try Base32.decode(encoded) == bytes)
        }
        let all = (0...255).map { UInt8($0) }
        #expect(try Base32.decode(Base32.encode(all)) == all)
    }

    @Test func mixedCaseIsAccepted() throws {
        #expect(try Base32.decode("mZxW6yTbOi") == Array("foobar".utf8))
        #expect(try Base32.decode("jbswy3dpEHPK3PXP") == Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF])
    }

    @Test(arguments: [
        "MZXW6YT!",  // character outside the alphabet
        "MZXW 6YTB",  // space
        "MZXW6YT0",  // 0 is not in the alphabet
        "MZXW6YT1",  // nor 1
        "MZXW6YT8",  // nor 8
        "MZXW-6YTB",  // separators are not skipped
        "MÿXW6YTB",  // non-ASCII
    ])
    func charactersOutsideTheAlphabetAreRefused(_ text: String) {
        let error = #expect(throws: OTPError.self) { try Base32.decode(text) }
        #expect(error?.code == .invalidBase32)
    }

    @Test(arguments: [
        "M",  // 1 character: 5 bits, no whole byte
        "MZX",  // 3 characters in the last group
        "MZXW6Y",  // 6 characters in the last group
        "MZ======",  // wrong padding: "MZ" has non-zero trailing bits
        "MY=====",  // padding that does not reach a multiple of 8
        "MY=======",  // padding beyond a multiple of 8
        "MY==MY==",  // padding in the middle
        "========",  // padding only
        "MZXW6YTB========",  // a whole group of padding
    ])
    func malformedLengthsAndPaddingAreRefused(_ text: String) {
        let error = #expect(throws: OTPError.self) { try Base32.decode(text) }
        #expect(error?.code == .invalidBase32)
    }

    /// RFC 4648 §3.5: the bits after the last whole byte must be zero. "MZXW6YQ" is "foob";
    /// "MZXW6YR" differs only in such a bit and would decode to the same bytes.
    @Test func nonZeroTrailingBitsAreRefused() throws {
        #expect(try Base32.decode("MZXW6YQ") == Array("foob".utf8))
        let error = #expect(throws: OTPError.self) { try Base32.decode("MZXW6YR") }
        #expect(error?.code == .invalidBase32)
        let padded = #expect(throws: OTPError.self) { try Base32.decode("MZXW6YR=") }
        #expect(padded?.code == .invalidBase32)
    }

    @Test func overlongInputIsRefused() {
        let text = String(repeating: "A", count: Base32.maximumEncodedLength + 8)
        let error = #expect(throws: OTPError.self) { try Base32.decode(text) }
        #expect(error?.code == .invalidBase32)
    }
}
