import Testing
@testable import OTP

/// Generating, importing and printing shared secrets.
@Suite struct OTPSecretTests {
    @Test func newSecretsAreTwentyRandomBytes() {
        let a = OTPSecret()
        let b = OTPSecret()
        #expect(a.byteCount == 20)
        #expect(a.base32.utf8.count == 32)
        // Two 160-bit random secrets are equal with probability 2^-160.
        #expect(a != b)
    }

    @Test(arguments: [16, 32, 64, 128])
    func randomSecretsOfOtherLengths(_ count: Int) throws {
        #expect(try OTPSecret(randomByteCount: count).byteCount == count)
    }

    @Test(arguments: [0, 10, 15, 129])
    func lengthsOutsideTheRangeAreRefused(_ count: Int) {
        let random = #expect(throws: OTPError.self) { try OTPSecret(randomByteCount: count) }
        #expect(random?.code == .invalidSecret)
        let given = #expect(throws: OTPError.self) { try OTPSecret(bytes: [UInt8](repeating: 1, count: count)) }
        #expect(given?.code == .invalidSecret)
    }

    @Test func base32RoundTrip() throws {
        let secret = OTPSecret()
        #expect(try OTPSecret(base32: secret.base32) == secret)
        #expect(try OTPSecret(base32: secret.base32.lowercased()).bytes == secret.bytes)
        // The RFC 4226 secret as authenticator apps show it.
        let rfc = try OTPSecret(bytes: Array("12345678901234567890".utf8))
        #expect(rfc.base32 == "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
    }

    @Test func invalidBase32AndShortSecretsAreRefused() {
        let text = #expect(throws: OTPError.self) { try OTPSecret(base32: "GEZDGNBV GY3TQOJQ") }
        #expect(text?.code == .invalidBase32)
        // 80 bits, as some older enrolments used: below RFC 4226's 128-bit minimum.
        let short = #expect(throws: OTPError.self) { try OTPSecret(base32: "JBSWY3DPEHPK3PXP") }
        #expect(short?.code == .invalidSecret)
    }

    @Test func descriptionsDoNotShowTheKey() throws {
        let secret = try OTPSecret(bytes: Array("12345678901234567890".utf8))
        #expect(secret.description == "OTPSecret(20 bytes)")
        #expect(String(reflecting: secret) == "OTPSecret(20 bytes)")
        #expect(!"\(secret)".contains(secret.base32))
    }
}
