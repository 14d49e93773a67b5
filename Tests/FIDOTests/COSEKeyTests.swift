import Crypto
import FIDO
import Foundation
import Testing

/// One of `cose_keys.json`'s `webauthn_credential_public_keys`.
struct COSEKeyVector: Sendable, CustomTestStringConvertible {
    let from: String
    let bytes: String
    let hex: String
    let kty: String
    let alg: Int
    let crv: Int?

    var testDescription: String { "\(kty) \(alg) from \(from)" }

    static let all: [COSEKeyVector] = VectorFiles.entries("cose_keys.json", key: "webauthn_credential_public_keys").compactMap { e in
        guard let summary = e["summary"] as? [String: Any], let kty = summary["kty"] as? String, let alg = summary["alg"] as? Int,
            let bytes = e["cose_key_b64url"] as? String, let hex = e["cose_key_cbor_hex"] as? String
        else { return nil }
        return COSEKeyVector(from: e["from_vector"] as? String ?? "", bytes: bytes, hex: hex, kty: kty, alg: alg, crv: summary["crv"] as? Int)
    }
}

@Suite struct COSEKeyTests {
    // MARK: - Vectors

    @Test(.enabled(if: VectorFiles.available, VectorFiles.skipMessage), arguments: COSEKeyVector.all)
    func webAuthnCredentialPublicKeys(_ v: COSEKeyVector) throws {
        let bytes = try #require(Base64URL.decode(v.bytes))
        #expect(Hex.encode(bytes) == v.hex)
        if v.kty == "AKP" {
            // ML-DSA: recognised, refused — OpenSSL 3.0 cannot verify it.
            let error = #expect(throws: COSEKeyError.self) { try COSEKey(bytes: bytes) }
            #expect(error?.code == .unsupportedAlgorithm)
            return
        }
        let key = try COSEKey(bytes: bytes)
        let expectedType: [String: COSEKey.KeyType] = ["EC2": .ec2, "OKP": .okp, "RSA": .rsa]
        #expect(key.keyType == expectedType[v.kty])
        #expect(key.algorithm.rawValue == v.alg)
        #expect(key.curve == v.crv)
        #expect(key.bytes == bytes)
        switch (v.kty, v.crv) {
        case ("EC2", 1): #expect(key.publicKey.kind == .ec(.p256))
        case ("EC2", 2): #expect(key.publicKey.kind == .ec(.p384))
        case ("EC2", 3): #expect(key.publicKey.kind == .ec(.p521))
        case ("OKP", _): #expect(key.publicKey.kind == .ed25519)
        default:
            guard case .rsa(let bits) = key.publicKey.kind else { Issue.record("not RSA"); return }
            #expect(bits >= 2048)
        }
    }

    @Test(.enabled(if: VectorFiles.available, VectorFiles.skipMessage))
    func vectorsCoverEveryKeyType() {
        #expect(COSEKeyVector.all.count == 11)
        #expect(Set(COSEKeyVector.all.map(\.kty)) == ["EC2", "OKP", "RSA", "AKP"])
    }

    // MARK: - Refusals

    static let x = [UInt8](repeating: 1, count: 32)

    static func ec2(_ extra: [(Int, CBORValue)] = [], drop: Set<Int> = [], alg: Int = -7, crv: Int = 1) -> [UInt8] {
        var entries: [(Int, CBORValue)] = [(1, .int(2)), (3, .int(alg)), (-1, .int(crv)), (-2, .bytes(x)), (-3, .bytes(x))]
        entries = entries.filter { !drop.contains($0.0) } + extra
        return CBORValue.map(entries.map { (key: CBORValue.int($0.0), value: $0.1) }).encoded
    }

    static func map(_ entries: [(Int, CBORValue)]) -> [UInt8] {
        CBORValue.map(entries.map { (key: CBORValue.int($0.0), value: $0.1) }).encoded
    }

    /// RFC 8032 §7.4, "1 octet": an Ed448 key, the message 0x03 and its signature.
    static let ed448Key = Hex.decode(
        "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c0866aea01eb00742802b8438ea4cb82169c235160627b4c3a9480")!
    static let ed448Signature = Hex.decode(
        "26b8f91727bd62897af15e41eb43c377efb9c610d48f2335cb0bd0087810f4352541b143c4b981b7e18f62de8ccdf633fc1bf037ab7cd7798"
            + "05e0dbcc0aae1cbcee1afb2e027df36bc04dcecbf154336c19f0af7e0a6472905e799f1953d2a0ff3348ab21aa4adafd1d234441cf807c03a00")!

    @Test(arguments: [-53, -8])
    func ed448KeysVerifyRFC8032Signatures(_ alg: Int) throws {
        let key = try COSEKey(bytes: Self.map([(1, .int(1)), (3, .int(alg)), (-1, .int(7)), (-2, .bytes(Self.ed448Key))]))
        #expect(key.keyType == .okp && key.curve == 7 && key.algorithm.rawValue == alg)
        #expect(key.publicKey.kind == .ed448)
        #expect(key.verify(signature: Self.ed448Signature, message: [0x03]))
        #expect(!key.verify(signature: Self.ed448Signature, message: [0x04]))
        var tampered = Self.ed448Signature
        tampered[0] ^= 1
        #expect(!key.verify(signature: tampered, message: [0x03]))
        #expect(COSEAlgorithm.ed448.name == "Ed448" && COSEAlgorithm.defaultAllowed.contains(.ed448))
    }

    static let rsaModulus: [UInt8] = [0xC1] + [UInt8](repeating: 0x5B, count: 254) + [0x01]

    @Test(arguments: [
        ("not CBOR", [0xFF], COSEKeyError.Code.malformed),
        ("not a map", CBORValue.array([]).encoded, .malformed),
        ("trailing bytes", ec2() + [0], .malformed),
        ("bytes as a label", CBORValue.map([(key: .bytes([1]), value: .int(2))]).encoded, .malformed),
        ("no kty", ec2(drop: [1]), .missingParameter),
        ("unknown kty", map([(1, .int(4)), (3, .int(-7))]), .unsupportedKeyType),
        ("text kty", map([(1, .text("EC2")), (3, .int(-7))]), .unsupportedKeyType),
        ("no alg", ec2(drop: [3]), .missingParameter),
        ("text alg", map([(1, .int(2)), (3, .text("ES256"))]), .unsupportedAlgorithm),
        ("unknown alg", ec2(alg: -999), .unsupportedAlgorithm),
        ("EC2 with EdDSA", ec2(alg: -8), .algorithmMismatch),
        ("EC2 with RS256", ec2(alg: -257), .algorithmMismatch),
        ("ES256 on P-384", ec2(crv: 2), .algorithmMismatch),
        ("ES384 on P-256", ec2(alg: -35), .algorithmMismatch),
        ("EC2 unknown curve", ec2(crv: 8), .unsupportedCurve),
        ("EC2 no crv", ec2(drop: [-1]), .missingParameter),
        ("EC2 no x", ec2(drop: [-2]), .missingParameter),
        ("EC2 no y", ec2(drop: [-3]), .missingParameter),
        ("EC2 compressed y", ec2([(-3, .bool(true))], drop: [-3]), .invalidParameter),
        ("EC2 short x", ec2([(-2, .bytes([1]))], drop: [-2]), .invalidParameter),
        ("EC2 private d", ec2([(-4, .bytes(x))]), .privateKeyMaterial),
        ("EC2 point not on curve", ec2(), .invalidKey),
        ("key_ops sign only", ec2([(4, .array([.int(1)]))]), .invalidParameter),
        ("OKP with ES256", map([(1, .int(1)), (3, .int(-7)), (-1, .int(6)), (-2, .bytes(x))]), .algorithmMismatch),
        ("OKP Ed448 with a 32-byte x", map([(1, .int(1)), (3, .int(-8)), (-1, .int(7)), (-2, .bytes(x))]), .invalidParameter),
        ("Ed448 (-53) on Ed25519", map([(1, .int(1)), (3, .int(-53)), (-1, .int(6)), (-2, .bytes(x))]), .algorithmMismatch),
        ("Ed25519 (-19) on Ed448", map([(1, .int(1)), (3, .int(-19)), (-1, .int(7)), (-2, .bytes(ed448Key))]), .algorithmMismatch),
        ("OKP X25519", map([(1, .int(1)), (3, .int(-8)), (-1, .int(4)), (-2, .bytes(x))]), .unsupportedCurve),
        ("OKP short x", map([(1, .int(1)), (3, .int(-8)), (-1, .int(6)), (-2, .bytes([1]))]), .invalidParameter),
        ("OKP private d", map([(1, .int(1)), (3, .int(-8)), (-1, .int(6)), (-2, .bytes(x)), (-4, .bytes(x))]), .privateKeyMaterial),
        ("RSA with ES256", map([(1, .int(3)), (3, .int(-7)), (-1, .bytes(rsaModulus)), (-2, .bytes([1, 0, 1]))]), .algorithmMismatch),
        ("RSA 1024-bit", map([(1, .int(3)), (3, .int(-257)), (-1, .bytes(Array(rsaModulus.prefix(128)))), (-2, .bytes([1, 0, 1]))]), .invalidKey),
        ("RSA even e", map([(1, .int(3)), (3, .int(-257)), (-1, .bytes(rsaModulus)), (-2, .bytes([1, 0, 0]))]), .invalidParameter),
        ("RSA no e", map([(1, .int(3)), (3, .int(-257)), (-1, .bytes(rsaModulus))]), .missingParameter),
        ("RSA private d", map([(1, .int(3)), (3, .int(-257)), (-1, .bytes(rsaModulus)), (-2, .bytes([1, 0, 1])), (-3, .bytes([1]))]), .privateKeyMaterial),
        ("AKP ML-DSA-44", map([(1, .int(7)), (3, .int(-48)), (-1, .bytes([1]))]), .unsupportedAlgorithm),
        ("AKP with ES256", map([(1, .int(7)), (3, .int(-7)), (-1, .bytes([1]))]), .algorithmMismatch),
    ] as [(String, [UInt8], COSEKeyError.Code)])
    func refusals(_ c: (name: String, bytes: [UInt8], code: COSEKeyError.Code)) {
        let error = #expect(throws: COSEKeyError.self, "\(c.name)") { try COSEKey(bytes: c.bytes) }
        #expect(error?.code == c.code, "\(c.name): \(error.map(String.init(describing:)) ?? "accepted")")
    }

    @Test func generatedKeyRoundTrips() throws {
        let authenticator = try TestAuthenticator()
        let key = try COSEKey(bytes: authenticator.coseKey)
        #expect(key.keyType == .ec2 && key.algorithm == .es256 && key.signatureAlgorithm == .es256 && key.curve == 1)
        let message = Array("message".utf8)
        let signature = try authenticator.key.sign(message, algorithm: .es256)
        #expect(key.verify(signature: signature, message: message))
        #expect(!key.verify(signature: signature, message: message + [0]))
        // Extra labels are ignored; key_ops with verify is fine.
        let withExtras = authenticator.coseKeyValue(extra: [(key: .int(2), value: .bytes([1])), (key: .int(4), value: .array([.int(2)])), (key: .text("x-note"), value: .text("hi"))])
        #expect(try COSEKey(bytes: withExtras.encoded).algorithm == .es256)
    }

    @Test func algorithmNames() {
        #expect(COSEAlgorithm.es256.description == "ES256 (-7)")
        #expect(COSEAlgorithm(-48).name == "ML-DSA-44")
        #expect(COSEAlgorithm(-48).signatureAlgorithm == nil)
        #expect(COSEAlgorithm(12345).name == "12345")
        #expect(!COSEAlgorithm.defaultAllowed.contains(.rs1))
    }
}
