import Testing
@testable import Crypto

@Suite struct PublicKeyTests {
    @Test func p256SignAndVerifyRoundTrip() throws {
        let key = try PrivateKey.generateP256()
        let pub = try key.publicKey()
        #expect(pub.kind == .ec(.p256))
        let message = Array("authenticatorData || hash".utf8)
        let sig = try key.sign(message, algorithm: .es256)
        #expect(pub.verify(signature: sig, message: message, algorithm: .es256))
        #expect(!pub.verify(signature: sig, message: message + [0], algorithm: .es256))
        // Algorithm confusion: a P-256 key never verifies under another algorithm.
        #expect(!pub.verify(signature: sig, message: message, algorithm: .rs256))
        #expect(!pub.verify(signature: sig, message: message, algorithm: .es384))
        // The same key rebuilt from its coordinates verifies too.
        let spki = pub.subjectPublicKeyInfo
        let point = Array(spki.suffix(64))
        let rebuilt = try PublicKey.ec(curve: .p256, x: Array(point[..<32]), y: Array(point[32...]))
        #expect(rebuilt.verify(signature: sig, message: message, algorithm: .es256))
        // JOSE form round trip.
        let raw = try #require(ECDSASignature.raw(fromDER: sig, size: 32))
        #expect(raw.count == 64)
        #expect(ECDSASignature.der(fromRaw: raw).map { rebuilt.verify(signature: $0, message: message, algorithm: .es256) } == true)
    }

    /// ES256 goes through OpenSSL's low-level ECDSA verify (CCryptoShims); it must refuse what
    /// the EVP path refuses: other DER encodings of the same signature, trailing bytes, a
    /// signature by another key, and ES256 signatures presented as ES384.
    @Test func es256RefusesNonCanonicalSignatures() throws {
        let key = try PrivateKey.generateP256()
        let pub = try key.publicKey()
        let message = Array("fast path".utf8)
        let sig = try key.sign(message, algorithm: .es256)
        #expect(pub.verify(signature: sig, message: message, algorithm: .es256))
        #expect(!pub.verify(signature: sig + [0], message: message, algorithm: .es256))
        // The same SEQUENCE with a long-form length (BER, not DER).
        let berLength = [0x30, 0x81, sig[1]] + sig[2...]
        #expect(!pub.verify(signature: Array(berLength), message: message, algorithm: .es256))
        var flipped = sig
        flipped[flipped.count - 1] ^= 0x01
        #expect(!pub.verify(signature: flipped, message: message, algorithm: .es256))
        let other = try PrivateKey.generateP256().publicKey()
        #expect(!other.verify(signature: sig, message: message, algorithm: .es256))
        #expect(!pub.verify(signature: sig, message: message, algorithm: .es384))
    }

    /// Every ECDSA algorithm's DER signature goes through the key's EC_KEY and ECDSA_verify
    /// (`signet_ecdsa_verify_der`) with the algorithm's own digest, no longer through
    /// EVP_DigestVerifyInit: a signature made through the EVP path verifies, and what the EVP
    /// path refuses is refused (BER, trailing bytes, a changed bit, another key, another
    /// digest, another algorithm). The raw r‖s path agrees on the same signature.
    @Test(arguments: zip([Curve.p256, .p384, .p521, .secp256k1], [SignatureAlgorithm.es256, .es384, .es512, .es256k]))
    func ecdsaDERVerificationOnEveryCurve(curve: Curve, algorithm: SignatureAlgorithm) throws {
        let key = try PrivateKey.generateEC(curve)
        let pub = try key.publicKey()
        let message = Array("signed data on \(curve)".utf8)
        let sig = try key.sign(message, algorithm: algorithm)
        #expect(pub.verify(signature: sig, message: message, algorithm: algorithm))
        #expect(!pub.verify(signature: sig, message: message + [0], algorithm: algorithm))
        #expect(!pub.verify(signature: sig + [0], message: message, algorithm: algorithm))
        // The same SEQUENCE with a longer length form than DER allows.
        let ber: [UInt8] = sig[1] < 0x80 ? [0x30, 0x81, sig[1]] + sig[2...] : [0x30, 0x82, 0x00, sig[2]] + sig[3...]
        #expect(!pub.verify(signature: ber, message: message, algorithm: algorithm))
        var flipped = sig
        flipped[flipped.count - 1] ^= 0x01
        #expect(!pub.verify(signature: flipped, message: message, algorithm: algorithm))
        let other = try PrivateKey.generateEC(curve).publicKey()
        #expect(!other.verify(signature: sig, message: message, algorithm: algorithm))
        // Signed over another digest of the same message: the verifier hashes with the
        // algorithm's own digest, never one that would make this pass.
        let otherDigest: SignatureAlgorithm = algorithm == .es256 ? .es384 : algorithm == .es256k ? .es512 : .es256
        let otherDigestSig = try key.sign(message, algorithm: otherDigest)
        #expect(!pub.verify(signature: otherDigestSig, message: message, algorithm: algorithm))
        for wrong in [SignatureAlgorithm.es256, .es384, .es512, .es256k] where wrong != algorithm {
            #expect(!pub.verify(signature: sig, message: message, algorithm: wrong))
        }
        let raw = try #require(ECDSASignature.raw(fromDER: sig, size: curve.coordinateSize))
        #expect(pub.verifyRawECDSA(signature: raw, message: message, algorithm: algorithm))
        // Signed as r‖s (P-256 straight from OpenSSL's ECDSA_SIG, the others through DER): each
        // half exactly the coordinate size, verifying as itself and as DER, and only over its message.
        for _ in 0..<32 {
            let direct = try key.signRawECDSA(message, algorithm: algorithm)
            #expect(direct.count == 2 * curve.coordinateSize)
            #expect(pub.verifyRawECDSA(signature: direct, message: message, algorithm: algorithm))
            #expect(!pub.verifyRawECDSA(signature: direct, message: message + [0], algorithm: algorithm))
            #expect(ECDSASignature.der(fromRaw: direct).map { pub.verify(signature: $0, message: message, algorithm: algorithm) } == true)
        }
    }

    @Test func pointsOffTheCurveAreRefused() throws {
        let x = [UInt8](repeating: 1, count: 32)
        let y = [UInt8](repeating: 2, count: 32)
        #expect(throws: CryptoError.self) { try PublicKey.ec(curve: .p256, x: x, y: y) }
        #expect(throws: CryptoError.self) { try PublicKey.ec(curve: .p256, x: [1], y: y) }
    }

    @Test func pemRoundTrip() throws {
        let key = try PrivateKey.generateP256()
        let pem = try key.pemPKCS8()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(!key.description.contains("BEGIN"))
        let loaded = try PrivateKey.fromPEM(pem)
        let sig = try loaded.sign([1, 2, 3], algorithm: .es256)
        #expect(try key.publicKey().verify(signature: sig, message: [1, 2, 3], algorithm: .es256))
        #expect(throws: CryptoError.self) { try PrivateKey.fromPEM("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }

    @Test(arguments: [[UInt8](), [0x30, 0x00], [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01], [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]])
    func malformedDERSignaturesAreRejected(_ der: [UInt8]) {
        #expect(ECDSASignature.raw(fromDER: der, size: 32) == nil)
    }

    @Test func derLengthsAndOIDs() {
        #expect(DER.length(5) == [5])
        #expect(DER.length(200) == [0x81, 200])
        #expect(DER.length(300) == [0x82, 0x01, 0x2C])
        #expect(DER.oid("1.2.840.10045.2.1") == [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01])
        #expect(DER.oid("2.999.3") == [0x06, 0x03, 0x88, 0x37, 0x03])
        #expect(DER.unsignedInteger([0x80]) == [0x02, 0x02, 0x00, 0x80])
        #expect(DER.unsignedInteger([0x00, 0x01]) == [0x02, 0x01, 0x01])
    }
    /// Raw r‖s ECDSA (`signet_ecdsa_verify_raw`) reuses one ECDSA_SIG per thread: a refused
    /// signature (r or s zero or past the order, a wrong half) must not leave anything that
    /// makes the next check on the thread pass or fail, in any order, on several threads at once.
    @Test func rawECDSAVerificationsOnOneThreadDoNotLeakIntoEachOther() async throws {
        let key = try PrivateKey.generateP256()
        let pub = try key.publicKey()
        let message = Array("raw r||s".utf8)
        let good = try #require(ECDSASignature.raw(fromDER: try key.sign(message, algorithm: .es256), size: 32))
        let order: [UInt8] = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
        let bad: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32) + good[32...],  // r = 0
            Array(good[..<32]) + [UInt8](repeating: 0, count: 32),  // s = 0
            order + good[32...],  // r = n
            Array(good[..<32]) + [UInt8](repeating: 0xFF, count: 32),  // s > n
            Array(good[32...]) + good[..<32],  // r and s swapped
            Array(good.dropLast()),  // odd length
            good + [0, 0],  // halves of 33 bytes
        ]
        #expect(pub.verifyRawECDSA(signature: good, message: message, algorithm: .es256))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for round in 0..<50 {
                        for (i, b) in bad.enumerated() where (i + round + t) % 2 == 0 {
                            #expect(!pub.verifyRawECDSA(signature: b, message: message, algorithm: .es256))
                            #expect(pub.verifyRawECDSA(signature: good, message: message, algorithm: .es256))
                        }
                        #expect(!pub.verifyRawECDSA(signature: good, message: message + [0], algorithm: .es256))
                        #expect(pub.verifyRawECDSA(signature: good, message: message, algorithm: .es256))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
