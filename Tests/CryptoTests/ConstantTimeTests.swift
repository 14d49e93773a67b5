import Crypto
import Testing

/// The one constant-time comparison (OTP codes, hashes, tokens use it).
@Suite struct ConstantTimeTests {
    @Test func equalAndUnequalInputsOfAnyLength() {
        #expect(ConstantTime.equals("123456", "123456"))
        #expect(!ConstantTime.equals("123456", "123457"))
        #expect(!ConstantTime.equals("023456", "123456"))
        #expect(!ConstantTime.equals("123456", "1234567"))
        #expect(!ConstantTime.equals("1234567", "123456"))
        #expect(!ConstantTime.equals([0], []))
        #expect(ConstantTime.equals([UInt8](), []))
        // A prefix padded with zero bytes differs from the longer input by length alone.
        #expect(!ConstantTime.equals([1, 2], [1, 2, 0]))
        #expect(ConstantTime.secretsEqual("a-secret", "a-secret") && !ConstantTime.secretsEqual("a-secret", "a-secreT"))
    }

    /// RFC 4231 test case 2 (HMAC-SHA-256 and -512) and RFC 2202 test case 2 (HMAC-SHA-1).
    @Test func hmacMatchesTheRFCVectors() {
        let key = Array("Jefe".utf8), message = Array("what do ya want for nothing?".utf8)
        #expect(Hex.encode(HMAC.authenticationCode(.sha1, key: key, message: message)) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        #expect(
            Hex.encode(HMAC.authenticationCode(.sha256, key: key, message: message))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Hex.encode(SHA256.hmac(key: key, data: message)) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(
            Hex.encode(HMAC.authenticationCode(.sha512, key: key, message: message))
                == "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737")
    }
}
