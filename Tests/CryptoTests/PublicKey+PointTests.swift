import Testing
@testable import Crypto

/// EC public keys built from their point (`signet_ec_public_key_from_point`: an EC_KEY on the
/// curve's shared group, no OpenSSL decoder) against the keys OpenSSL's decoders build from the
/// same point's SubjectPublicKeyInfo (`d2i_PUBKEY`, how `PublicKey.ec` built every EC key before
/// issue #14's change): the same keys accepted, the same SubjectPublicKeyInfo, the same
/// signatures verified, and every malformed point refused with both.
extension PublicKeyTests {
    static let curves: [Curve] = [.p256, .p384, .p521, .secp256k1]

    /// The DER SubjectPublicKeyInfo of `point` on `curve`, as `PublicKey.ec` used to build it.
    static func spki(curve: Curve, point: [UInt8]) -> [UInt8] {
        DER.sequence(DER.sequence(DER.oid("1.2.840.10045.2.1"), DER.oid(curve.oid)), DER.bitString(point))
    }

    static func generatedPoint(_ curve: Curve) throws -> (key: PrivateKey, point: [UInt8]) {
        let key = try PrivateKey.generateEC(curve)
        let point = Array(try key.publicKey().subjectPublicKeyInfo.suffix(1 + 2 * curve.coordinateSize))
        return (key, point)
    }

    @Test(arguments: curves)
    func keysFromPointsAreTheDecodersKeys(curve: Curve) throws {
        let (key, point) = try Self.generatedPoint(curve)
        #expect(point.first == 0x04)
        let size = curve.coordinateSize
        let fromPoint = try PublicKey.ec(curve: curve, x: Array(point[1...size]), y: Array(point[(1 + size)...]))
        let decoded = try PublicKey.fromSubjectPublicKeyInfo(Self.spki(curve: curve, point: point), expected: .ec(curve))
        #expect(fromPoint.kind == .ec(curve))
        #expect(fromPoint.pkey == nil)  // no EVP_PKEY: every operation goes through the EC_KEY
        // The SubjectPublicKeyInfo is encoded from the EC_KEY: named curve, uncompressed point,
        // byte for byte what the decoder's key and the private key export.
        #expect(fromPoint.subjectPublicKeyInfo == decoded.subjectPublicKeyInfo)
        #expect(fromPoint.subjectPublicKeyInfo == (try key.publicKey().subjectPublicKeyInfo))
        let algorithm: SignatureAlgorithm = [.p256: .es256, .p384: .es384, .p521: .es512, .secp256k1: .es256k][curve]!
        let message = Array("signed on \(curve)".utf8)
        let signature = try key.sign(message, algorithm: algorithm)
        #expect(fromPoint.verify(signature: signature, message: message, algorithm: algorithm))
        #expect(decoded.verify(signature: signature, message: message, algorithm: algorithm))
        #expect(!fromPoint.verify(signature: signature, message: message + [1], algorithm: algorithm))
        let raw = try #require(ECDSASignature.raw(fromDER: signature, size: size))
        #expect(fromPoint.verifyRawECDSA(signature: raw, message: message, algorithm: algorithm))
        // Only the key's own algorithm, and never through the EVP path (there is no EVP_PKEY).
        for other in [SignatureAlgorithm.es256, .es384, .es512, .es256k, .rs256, .ps256, .ed25519] where other != algorithm {
            #expect(!fromPoint.verify(signature: signature, message: message, algorithm: other))
        }
        // Another key's signature is refused.
        let (otherKey, _) = try Self.generatedPoint(curve)
        #expect(!fromPoint.verify(signature: try otherKey.sign(message, algorithm: algorithm), message: message, algorithm: algorithm))
    }

    /// A SubjectPublicKeyInfo with a named curve and an uncompressed point is built from its
    /// point too; a compressed one, which OpenSSL's decoders accepted, still is accepted (through
    /// them), and a kind other than the expected one is still refused.
    @Test(arguments: curves)
    func subjectPublicKeyInfosTakeTheSamePath(curve: Curve) throws {
        let (key, point) = try Self.generatedPoint(curve)
        let spki = Self.spki(curve: curve, point: point)
        let fast = try PublicKey.fromSubjectPublicKeyInfo(spki, expected: .ec(curve))
        #expect(fast.pkey == nil && fast.kind == .ec(curve) && fast.subjectPublicKeyInfo == spki)
        let size = curve.coordinateSize
        let compressed = Self.spki(curve: curve, point: [0x02 | (point.last! & 1)] + point[1...size])
        let decoded = try PublicKey.fromSubjectPublicKeyInfo(compressed)
        #expect(decoded.pkey != nil && decoded.kind == .ec(curve))
        let algorithm: SignatureAlgorithm = [.p256: .es256, .p384: .es384, .p521: .es512, .secp256k1: .es256k][curve]!
        let signature = try key.sign([7], algorithm: algorithm)
        #expect(fast.verify(signature: signature, message: [7], algorithm: algorithm))
        #expect(decoded.verify(signature: signature, message: [7], algorithm: algorithm))
        let other: Curve = curve == .p256 ? .p384 : .p256
        #expect(throws: CryptoError("unexpected key type")) { try PublicKey.fromSubjectPublicKeyInfo(spki, expected: .ec(other)) }
        #expect(throws: CryptoError("unexpected key type")) { try PublicKey.fromSubjectPublicKeyInfo(spki, expected: .ed25519) }
        var offCurve = spki
        offCurve[offCurve.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try PublicKey.fromSubjectPublicKeyInfo(offCurve) }
    }

    /// A point off the curve (y changed by one bit): refused from its coordinates, from the
    /// point, and by the decoders.
    @Test(arguments: curves)
    func pointsOffTheCurveAreRefusedOnEveryCurve(curve: Curve) throws {
        var (_, point) = try Self.generatedPoint(curve)
        point[point.count - 1] ^= 0x01
        let size = curve.coordinateSize
        #expect(throws: CryptoError("not a valid public key")) {
            try PublicKey.ec(curve: curve, x: Array(point[1...size]), y: Array(point[(1 + size)...]))
        }
        #expect(throws: CryptoError("not a valid public key")) { try PublicKey.ec(curve: curve, point: point) }
        #expect(throws: CryptoError.self) { try PublicKey.fromSubjectPublicKeyInfo(Self.spki(curve: curve, point: point)) }
    }

    /// The point at infinity: its one-byte encoding (X9.62 0x00), and 0x00 followed by
    /// coordinates; and the all-zero coordinates (0, 0), on none of these curves.
    @Test(arguments: curves)
    func thePointAtInfinityIsRefused(curve: Curve) throws {
        let size = curve.coordinateSize
        #expect(throws: CryptoError("not a valid public key")) { try PublicKey.ec(curve: curve, point: [0x00]) }
        #expect(throws: CryptoError("not a valid public key")) { try PublicKey.ec(curve: curve, point: [UInt8](repeating: 0, count: 1 + 2 * size)) }
        #expect(throws: CryptoError("not a valid public key")) {
            try PublicKey.ec(curve: curve, x: [UInt8](repeating: 0, count: size), y: [UInt8](repeating: 0, count: size))
        }
    }

    /// Only the uncompressed form, of exactly the curve's length: compressed (0x02/0x03, which
    /// `PublicKey.ec` never accepted: it takes both coordinates) and hybrid (0x06/0x07) forms of a
    /// valid point are refused, as are points one byte short or long, and coordinates of another
    /// length.
    @Test(arguments: curves)
    func otherFormsAndLengthsAreRefused(curve: Curve) throws {
        let (_, point) = try Self.generatedPoint(curve)
        let size = curve.coordinateSize
        let x = Array(point[1...size])
        let y = Array(point[(1 + size)...])
        let odd = y.last! & 1
        #expect(throws: Never.self) { try PublicKey.ec(curve: curve, point: point) }
        let refused = CryptoError("not a valid public key")
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: [0x02 | odd] + x) }
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: [0x06 | odd] + x + y) }
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: Array(point.dropLast())) }
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: point + [0]) }
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: []) }
        let wrongLength = CryptoError("EC coordinates have the wrong length")
        #expect(throws: wrongLength) { try PublicKey.ec(curve: curve, x: Array(x.dropFirst()), y: y) }
        #expect(throws: wrongLength) { try PublicKey.ec(curve: curve, x: x, y: [0] + y) }
        #expect(throws: wrongLength) { try PublicKey.ec(curve: curve, x: [], y: []) }
        // A point of another curve's length (P-256's on P-384 and the reverse).
        let other: Curve = curve == .p384 ? .p256 : .p384
        let (_, otherPoint) = try Self.generatedPoint(other)
        #expect(throws: refused) { try PublicKey.ec(curve: curve, point: otherPoint) }
    }

    /// A coordinate at or past the field's prime is refused even when it names a point of the
    /// curve modulo p: on secp256k1 (p = 2^256 - 2^32 - 977) the point (1, y) with
    /// y² = 1 + 7 mod p is valid, and x = 1 + p still fits in 32 bytes. The decoders refuse it too.
    @Test func coordinatesPastTheFieldPrimeAreRefused() throws {
        let y = hexBytes("4218f20ae6c646b363db68605822fb14264ca8d2587fdd6fbc750d587e76a7ee")
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let onePlusP = hexBytes("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc30")
        let valid = try PublicKey.ec(curve: .secp256k1, x: one, y: y)
        #expect(valid.kind == .ec(.secp256k1))
        _ = try PublicKey.fromSubjectPublicKeyInfo(Self.spki(curve: .secp256k1, point: [0x04] + one + y))
        #expect(throws: CryptoError("not a valid public key")) { try PublicKey.ec(curve: .secp256k1, x: onePlusP, y: y) }
        #expect(throws: CryptoError.self) { try PublicKey.fromSubjectPublicKeyInfo(Self.spki(curve: .secp256k1, point: [0x04] + onePlusP + y)) }
        // P-256's prime itself as x.
        let p256Prime = hexBytes("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        #expect(throws: CryptoError("not a valid public key")) { try PublicKey.ec(curve: .p256, x: p256Prime, y: y) }
    }

    /// Many keys on one curve share its group (and P-384's precomputed table) and are used from
    /// several threads at once: each verifies its own signature and no other.
    @Test func keysOnTheSharedGroupStayApartAcrossThreads() async throws {
        var cases: [(PublicKey, [UInt8], [UInt8])] = []
        for i in 0..<8 {
            let curve: Curve = i % 2 == 0 ? .p256 : .p384
            let (key, point) = try Self.generatedPoint(curve)
            let message = Array("key \(i)".utf8)
            let signature = try key.sign(message, algorithm: curve == .p256 ? .es256 : .es384)
            cases.append((try PublicKey.ec(curve: curve, point: point), message, signature))
        }
        let keys = cases
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, (key, message, signature)) in keys.enumerated() {
                group.addTask {
                    let algorithm: SignatureAlgorithm = i % 2 == 0 ? .es256 : .es384
                    for _ in 0..<20 {
                        #expect(key.verify(signature: signature, message: message, algorithm: algorithm))
                        let (_, otherMessage, otherSignature) = keys[(i + 2) % keys.count]
                        #expect(!key.verify(signature: otherSignature, message: otherMessage, algorithm: algorithm))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// RSA keys imported from (n, e) (`EVP_PKEY_fromdata`) and EdDSA keys from raw bytes
/// (`EVP_PKEY_new_raw_public_key`) against OpenSSL's decoders on the SubjectPublicKeyInfo that
/// `PublicKey.rsa`/`.ed25519`/`.ed448` used to build: the same keys, or both refused.
extension PublicKeyTests {
    static func decoded(_ spki: [UInt8]) -> (PublicKey.Kind, [UInt8])? {
        (try? PublicKey.fromSubjectPublicKeyInfo(spki)).map { ($0.kind, $0.subjectPublicKeyInfo) }
    }

    @Test(arguments: [
        ([UInt8](repeating: 0xC5, count: 256), [UInt8]([0x01, 0x00, 0x01])),  // 2048 bits, 65537
        ([0x00, 0x00] + [UInt8](repeating: 0xA3, count: 384), [0x03]),  // leading zeros, 3072 bits, e = 3
        ([UInt8](repeating: 0xFF, count: 1024), [0x01, 0x00, 0x01]),  // 8192 bits, the largest taken
        ([0x00], [0x00]), ([0x01], [0x01]), ([0x80], [0x00, 0x00, 0x01]),  // degenerate: as the decoders do
    ])
    func rsaKeysFromPartsAreTheDecodersKeys(modulus: [UInt8], exponent: [UInt8]) throws {
        let spki = DER.sequence(
            DER.sequence(DER.oid("1.2.840.113549.1.1.1"), DER.null), DER.bitString(DER.sequence(DER.unsignedInteger(modulus), DER.unsignedInteger(exponent))))
        let imported = (try? PublicKey.rsa(modulus: modulus, exponent: exponent)).map { ($0.kind, $0.subjectPublicKeyInfo) }
        let decoded = Self.decoded(spki)
        #expect(imported?.0 == decoded?.0)
        #expect(imported?.1 == decoded?.1)
        if let imported { #expect(imported.1 == spki) }
    }

    @Test func rsaPartsOutOfRangeAreRefused() {
        #expect(throws: CryptoError("RSA parameters out of range")) { try PublicKey.rsa(modulus: [], exponent: [1]) }
        #expect(throws: CryptoError("RSA parameters out of range")) { try PublicKey.rsa(modulus: [1], exponent: []) }
        #expect(throws: CryptoError("RSA parameters out of range")) {
            try PublicKey.rsa(modulus: [UInt8](repeating: 0xFF, count: 1025), exponent: [1, 0, 1])
        }
    }

    @Test func edDSAKeysFromRawBytesAreTheDecodersKeys() throws {
        for (length, oid, kind) in [(32, "1.3.101.112", PublicKey.Kind.ed25519), (57, "1.3.101.113", .ed448)] {
            for fill in [UInt8(0x00), 0x5A, 0xFF] {
                let raw = [UInt8](repeating: fill, count: length)
                let key = try length == 32 ? PublicKey.ed25519(raw) : PublicKey.ed448(raw)
                let spki = DER.sequence(DER.sequence(DER.oid(oid)), DER.bitString(raw))
                #expect(key.kind == kind)
                #expect(key.subjectPublicKeyInfo == spki)
                #expect(Self.decoded(spki)?.1 == spki)
            }
        }
        #expect(throws: CryptoError("Ed25519 keys are 32 bytes")) { try PublicKey.ed25519([UInt8](repeating: 1, count: 31)) }
        #expect(throws: CryptoError("Ed448 keys are 57 bytes")) { try PublicKey.ed448([UInt8](repeating: 1, count: 58)) }
    }
}

private func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
