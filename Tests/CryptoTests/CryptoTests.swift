import Foundation
import Testing
@testable import Crypto

@Suite struct SHA256Tests {
    // FIPS 180-2 examples.
    @Test func knownDigests() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // SHA-384 and SHA-512 (FIPS 180-4 examples) through the same low-level path.
        #expect(
            Hex.encode(SHA2.hash(Array("abc".utf8), length: 48))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")
        #expect(
            Hex.encode(SHA2.hash(Array("abc".utf8), length: 64))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Hex.encode(SHA2.hash(Array("abc".utf8), length: 32)) == Hex.encode(SHA256.hash(Array("abc".utf8))))
    }

    // RFC 4231 test case 2.
    @Test func hmacRFC4231() {
        let mac = SHA256.hmac(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

@Suite struct EncodingTests {
    /// Against Foundation's base64 with the URL alphabet and no padding, for every length to
    /// 70, from an array, a slice, and a collection without contiguous storage; hex likewise.
    @Test func encodingsMatchAReference() {
        var generator = SystemRandomNumberGenerator()
        for n in 0..<70 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let reference = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == reference)
            #expect(Base64URL.encodeASCII(bytes) == Array(reference.utf8))
            #expect(Base64URL.encode(bytes[...]) == reference)
            #expect(Hex.encode(bytes) == bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        }
        let repeated = repeatElement(UInt8(0xFB), count: 7)  // no contiguous storage
        #expect(Base64URL.encode(repeated) == Base64URL.encode(Array(repeated)))
        #expect(Base64URL.encodeASCII(repeated) == Array(Base64URL.encode(Array(repeated)).utf8))
    }

    @Test func base64URLRoundTripsWithoutPadding() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let s = Base64URL.encode(bytes)
            #expect(!s.contains("=") && !s.contains("+") && !s.contains("/"))
            #expect(Base64URL.decode(s) == bytes)
        }
    }

    @Test(arguments: ["a", "ab=", "a+b/", "ab cd", "ab\n"])
    func base64URLRejectsOutsideItsAlphabet(_ s: String) {
        #expect(Base64URL.decode(s) == nil)
    }

    /// One byte string, one spelling: "QQ" is [0x41]; "QR".."QZ" would decode to the same byte
    /// with trailing bits set, and are refused (as is the vectors' "shouldhavebeenthisvalue").
    @Test(arguments: ["QR", "QS", "Qf", "QUF", "QUG", "shouldhavebeenthisvalue"])
    func base64URLRefusesNonCanonicalSpellings(_ s: String) {
        #expect(Base64URL.decode(s) == nil)
    }

    @Test func base64URLCanonicalSpellingsDecode() {
        #expect(Base64URL.decode("QQ") == [0x41])
        #expect(Base64URL.decode("QUE") == [0x41, 0x41])
        #expect(Base64URL.decode("shouldhavebeenthisvaluc").map(Base64URL.encode) == "shouldhavebeenthisvaluc")
        #expect(Base64URL.decode("") == [])
    }

    @Test func hex() {
        #expect(Hex.encode([0, 1, 0xab, 0xff]) == "0001abff")
        #expect(Hex.decode("0001ABff") == [0, 1, 0xab, 0xff])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }
}

@Suite struct SecretTests {
    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.secretsEqual("dev-admin-token", "dev-admin-token"))
        #expect(!ConstantTime.secretsEqual("dev-admin-token", "dev-admin-tokeN"))
        #expect(!ConstantTime.secretsEqual("dev-admin-token", ""))
    }

    @Test func randomBytesDiffer() {
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32 && a != b)
        #expect(Base64URL.decode(SecureRandom.token(byteCount: 32))?.count == 32)
    }
}

@Suite struct InsecureSHA1Tests {
    // FIPS 180-2 example.
    @Test func knownDigest() {
        #expect(Hex.encode(InsecureSHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }
}
