import COpenSSL
import Crypto
import FIDO
import Foundation

/// `signet-bench key-parse [seconds] [case]`: building a public key from its parts beside one
/// verification with it, one thread, for each key type a sign-in reads (issue #14: a WebAuthn
/// sign-in whose credential is not in the authentication service's cache parses the stored key
/// before it verifies).
///
/// Measured in the same alternating 50 ms slices of the thread's CPU time
/// (``interleavedRates(seconds:_:)``), per case:
/// - `parse`: the key as Signet builds it (`PublicKey.ec(curve:x:y:)`, `.rsa`, `.ed25519`);
/// - `parse_decoder`: the same key from its DER SubjectPublicKeyInfo through `d2i_PUBKEY` and
///   OpenSSL 3's decoders, which is how `PublicKey.ec`, `.rsa` and `.ed25519` built every key
///   before: the in-process anchor of the change (a lower bound of the old cost);
/// - `cose_parse` (P-256 only): `COSEKey(bytes:)` of the same key, the whole parse of a stored
///   WebAuthn credential key;
/// - `verify`: one signature verification with the parsed key (DER ECDSA, RS256, EdDSA).
func keyParseBenchmark(seconds: Double, only: String? = nil) throws {
    let message = Array("authenticatorData || SHA-256(clientDataJSON)".utf8)
    var cases: [(name: String, key: PrivateKey, algorithm: SignatureAlgorithm)] = []
    for (name, curve, algorithm) in [
        ("p256", Curve.p256, SignatureAlgorithm.es256), ("p384", .p384, .es384), ("p521", .p521, .es512), ("secp256k1", .secp256k1, .es256k),
    ] where only == nil || only == name {
        cases.append((name, try PrivateKey.generateEC(curve), algorithm))
    }
    if only == nil || only == "rsa2048" { cases.append(("rsa2048", try generatedKey(EVP_PKEY_RSA, rsaBits: 2048), .rs256)) }
    if only == nil || only == "ed25519" { cases.append(("ed25519", try generatedKey(EVP_PKEY_ED25519), .ed25519)) }
    for c in cases {
        let publicKey = try c.key.publicKey()
        let spki = publicKey.subjectPublicKeyInfo
        let signature = try c.key.sign(message, algorithm: c.algorithm)
        guard publicKey.verify(signature: signature, message: message, algorithm: c.algorithm) else { throw CryptoError("bench: signature") }
        let parse: () throws -> PublicKey
        var cose: [UInt8]? = nil
        switch publicKey.kind {
        case .ec(let curve):
            // SubjectPublicKeyInfo ends with the uncompressed point 0x04 ‖ x ‖ y.
            let size = curve.coordinateSize
            let point = Array(spki.suffix(1 + 2 * size))
            guard point.first == 0x04 else { throw CryptoError("bench: point") }
            let x = Array(point[1...size])
            let y = Array(point[(1 + size)...])
            parse = { try PublicKey.ec(curve: curve, x: x, y: y) }
            if curve == .p256 {
                // COSE_Key (RFC 9052 §7): {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
                cose = [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20] + x + [0x22, 0x58, 0x20] + y
            }
        case .rsa:
            // RSAPublicKey (RFC 8017 A.1.1) in the SubjectPublicKeyInfo's BIT STRING.
            var reader = BenchDERReader(spki)
            guard let outer = reader.read(0x30), var fields = BenchDERReader(outer).skipping(0x30), let parts = fields.read(0x03) else {
                throw CryptoError("bench: RSA SPKI")
            }
            var rsa = BenchDERReader(Array(parts.dropFirst()))
            guard let sequence = rsa.read(0x30) else { throw CryptoError("bench: RSAPublicKey") }
            var integers = BenchDERReader(sequence)
            guard let n = integers.read(0x02), let e = integers.read(0x02) else { throw CryptoError("bench: RSA integers") }
            let modulus = Array(n.drop { $0 == 0 })
            parse = { try PublicKey.rsa(modulus: modulus, exponent: e) }
        case .ed25519:
            let raw = Array(spki.suffix(32))
            parse = { try PublicKey.ed25519(raw) }
        case .ed448:
            throw CryptoError("bench: no Ed448 case")
        }
        // Every parse must give a key that verifies: the figures are of working keys.
        guard try parse().verify(signature: signature, message: message, algorithm: c.algorithm),
            try PublicKey.fromSubjectPublicKeyInfo(spki).verify(signature: signature, message: message, algorithm: c.algorithm)
        else { throw CryptoError("bench: parsed key does not verify") }
        // OpenSSL 3's decoders on the same key's SubjectPublicKeyInfo, called directly:
        // `PublicKey.fromSubjectPublicKeyInfo` now builds a named-curve EC key from its point
        // too. The old `PublicKey.ec` cost a little more than this (it also built the DER, read
        // the group's name and exported an EC_KEY from the EVP_PKEY).
        let decode = {
            spki.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_PUBKEY(nil, &pointer, buffer.count)
            }
        }
        guard let decoded = decode() else { throw CryptoError("bench: d2i_PUBKEY") }
        EVP_PKEY_free(decoded)
        var bodies: [() throws -> Void] = [
            { _ = try parse() }, { EVP_PKEY_free(decode()) },
            { _ = publicKey.verify(signature: signature, message: message, algorithm: c.algorithm) },
        ]
        if let cose {
            guard try COSEKey(bytes: cose).publicKey.verify(signature: signature, message: message, algorithm: c.algorithm) else {
                throw CryptoError("bench: COSE key does not verify")
            }
            bodies.append({ _ = try COSEKey(bytes: cose) })
        }
        let rates = try interleavedRates(seconds: seconds, bodies)
        print(String(format: "key_parse_\(c.name)_per_s %.0f", rates[0]))
        print(String(format: "key_parse_decoder_\(c.name)_per_s %.0f", rates[1]))
        print(String(format: "verify_\(c.name)_per_s %.0f", rates[2]))
        if rates.count > 3 { print(String(format: "cose_key_parse_\(c.name)_per_s %.0f", rates[3])) }
    }
}

/// A key of `type` generated by OpenSSL (RSA of `rsaBits`, or Ed25519), through its PEM.
private func generatedKey(_ type: Int32, rsaBits: Int32 = 0) throws -> PrivateKey {
    guard let context = EVP_PKEY_CTX_new_id(type, nil) else { throw CryptoError("bench: keygen context") }
    defer { EVP_PKEY_CTX_free(context) }
    guard EVP_PKEY_keygen_init(context) == 1 else { throw CryptoError("bench: keygen init") }
    if type == EVP_PKEY_RSA, EVP_PKEY_CTX_set_rsa_keygen_bits(context, rsaBits) != 1 { throw CryptoError("bench: RSA bits") }
    var key: OpaquePointer?
    guard EVP_PKEY_keygen(context, &key) == 1, let key else { throw CryptoError("bench: keygen") }
    defer { EVP_PKEY_free(key) }
    guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError("bench: BIO") }
    defer { BIO_free(bio) }
    guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw CryptoError("bench: PEM") }
    var pointer: UnsafeMutablePointer<CChar>?
    let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
    guard length > 0, let pointer else { throw CryptoError("bench: PEM") }
    return try PrivateKey.fromPEM(String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self))
}

/// Just enough DER (short and long definite lengths) to take a generated key's parts apart.
private struct BenchDERReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The contents of the next element if it has `tag`.
    mutating func read(_ tag: UInt8) -> [UInt8]? {
        guard index + 2 <= bytes.count, bytes[index] == tag else { return nil }
        var length = Int(bytes[index + 1])
        var start = index + 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 3, start + count <= bytes.count else { return nil }
            length = bytes[start..<(start + count)].reduce(0) { $0 << 8 | Int($1) }
            start += count
        }
        guard start + length <= bytes.count else { return nil }
        index = start + length
        return Array(bytes[start..<index])
    }

    /// This reader past the next element, if it has `tag`.
    func skipping(_ tag: UInt8) -> BenchDERReader? {
        var copy = self
        return copy.read(tag) == nil ? nil : copy
    }
}
