import Testing
@testable import OTP

/// One row of RFC 4226 Appendix D: the HMAC-SHA-1 value, the dynamically truncated 31-bit
/// value and the 6-digit HOTP for a counter, under the secret "12345678901234567890".
struct RFC4226Vector: Sendable, CustomTestStringConvertible {
    let counter: UInt64
    let hmac: String
    let truncated: UInt32
    let code: String

    var testDescription: String { "counter \(counter)" }

    static let all: [RFC4226Vector] = [
        .init(counter: 0, hmac: "cc93cf18508d94934c64b65d8ba7667fb7cde4b0", truncated: 1_284_755_224, code: "755224"),
        .init(counter: 1, hmac: "75a48a19d4cbe100644e8ac1397eea747a2d33ab", truncated: 1_094_287_082, code: "287082"),
        .init(counter: 2, hmac: "0bacb7fa082fef30782211938bc1c5e70416ff44", truncated: 137_359_152, code: "359152"),
        .init(counter: 3, hmac: "66c28227d03a2d5529262ff016a1e6ef76557ece", truncated: 1_726_969_429, code: "969429"),
        .init(counter: 4, hmac: "a904c900a64b35909874b33e61c5938a8e15ed1c", truncated: 1_640_338_314, code: "338314"),
        .init(counter: 5, hmac: "a37e783d7b7233c083d4f62926c7a25f238d0316", truncated: 868_254_676, code: "254676"),
        .init(counter: 6, hmac: "bc9cd28561042c83f219324d3c607256c03272ae", truncated: 1_918_287_922, code: "287922"),
        .init(counter: 7, hmac: "a4fb960c0bc06e1eabb804e5b397cdc4b45596fa", truncated: 82_162_583, code: "162583"),
        .init(counter: 8, hmac: "1b3c89f65e6c9e883012052823443f048b4332db", truncated: 673_399_871, code: "399871"),
        .init(counter: 9, hmac: "1637409809a679dc698207310c8c7fc07290d9e5", truncated: 645_520_489, code: "520489"),
    ]
}

/// RFC 4226 HOTP: Appendix D, dynamic truncation, verification with look-ahead.
@Suite struct HOTPTests {
    /// The RFC 4226 Appendix D secret, ASCII "12345678901234567890".
    static let secret = try! OTPSecret(bytes: Array("12345678901234567890".utf8))

    @Test(arguments: RFC4226Vector.all)
    func rfc4226AppendixD(_ vector: RFC4226Vector) throws {
        let hotp = try HOTP(secret: Self.secret)
        #expect(hotp.code(counter: vector.counter) == vector.code)
        // The intermediate values of the appendix: the HMAC and the truncation.
        let message = withUnsafeBytes(of: vector.counter.bigEndian) { Array($0) }
        let mac = OTPAlgorithm.sha1.hmac(key: Self.secret.bytes, message: message)
        #expect(hex(mac) == vector.hmac)
        #expect(HOTP.truncate(mac) == vector.truncated)
    }

    /// RFC 4226 §5.4: offset 0xa, DBC 0x50ef7f19 = 1357872921, six digits 872921.
    @Test func rfc4226Section5_4Example() throws {
        let mac = try #require(unhex("1f8698690e02ca16618550ef7f19da8e945b555a"))
        #expect(HOTP.truncate(mac) == 0x50EF_7F19)
        #expect(HOTP.truncate(mac) % 1_000_000 == 872_921)
    }

    /// The truncation masks the top bit and reads the four bytes at the offset, also for the
    /// largest offset (15) with a 20-byte MAC.
    @Test func truncationAtLargestOffset() {
        var mac = [UInt8](repeating: 0, count: 20)
        mac[15] = 0xFF
        mac[16] = 0x01
        mac[17] = 0x02
        mac[18] = 0x03
        mac[19] = 0x0F
        #expect(HOTP.truncate(mac) == 0x7F01_0203)
    }

    @Test(arguments: [6, 7, 8])
    func codesHaveTheRequestedLength(_ digits: Int) throws {
        let hotp = try HOTP(secret: Self.secret, digits: digits)
        for counter in UInt64(0)..<50 {
            let code = hotp.code(counter: counter)
            #expect(code.utf8.count == digits)
            #expect(code.allSatisfy(\.isASCII) && code.allSatisfy(\.isNumber))
        }
        // The 8-digit code is the 31-bit value modulo 10^8: for counter 0 that is 84755224.
        if digits == 8 { #expect(hotp.code(counter: 0) == "84755224") }
    }

    @Test(arguments: [-1, 0, 5, 9, 10])
    func digitsOutOfRangeAreRefused(_ digits: Int) {
        let error = #expect(throws: OTPError.self) { try HOTP(secret: Self.secret, digits: digits) }
        #expect(error?.code == .invalidParameter)
    }

    // MARK: - Verification

    @Test func verifyReturnsTheMatchedCounter() throws {
        let hotp = try HOTP(secret: Self.secret)
        #expect(try hotp.verify("755224", counter: 0) == 0)
        #expect(try hotp.verify("359152", counter: 0, lookAhead: 3) == 2)
        #expect(try hotp.verify("520489", counter: 9, lookAhead: 20) == 9)
    }

    @Test func codeBeyondTheLookAheadIsRefused() throws {
        let hotp = try HOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try hotp.verify("969429", counter: 0, lookAhead: 2) }
        #expect(error?.code == .codeMismatch)
        // A used counter (below the expected one) is never accepted again.
        let replay = #expect(throws: OTPError.self) { try hotp.verify("755224", counter: 1, lookAhead: 5) }
        #expect(replay?.code == .codeMismatch)
    }

    @Test(arguments: ["75522", "7552240", "75522a", " 755224", "７５５２２４", ""])
    func malformedCodesAreRefused(_ code: String) throws {
        let hotp = try HOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try hotp.verify(code, counter: 0) }
        #expect(error?.code == .malformedCode)
    }

    @Test(arguments: [-1, HOTP.maximumLookAhead + 1])
    func lookAheadOutOfRangeIsRefused(_ lookAhead: Int) throws {
        let hotp = try HOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try hotp.verify("755224", counter: 0, lookAhead: lookAhead) }
        #expect(error?.code == .invalidParameter)
    }

    @Test func lookAheadStopsAtTheEndOfTheCounterSpace() throws {
        let hotp = try HOTP(secret: Self.secret)
        let last = hotp.code(counter: .max)
        #expect(try hotp.verify(last, counter: .max, lookAhead: 5) == .max)
        #expect(try hotp.verify(last, counter: .max - 1, lookAhead: 5) == .max)
    }
}
