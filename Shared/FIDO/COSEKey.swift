import Crypto

/// A credential public key in COSE_Key form (RFC 9052 §7, RFC 9053, RFC 8230), parsed into an
/// OpenSSL key and the one algorithm it may be used with.
///
/// Accepted combinations (WebAuthn L3 §5.8.5, §6.5.1.1):
///
/// | kty | crv | alg |
/// |---|---|---|
/// | EC2 (2) | P-256 (1) / P-384 (2) / P-521 (3) | ES256 (-7) / ES384 (-35) / ES512 (-36), each with its curve |
/// | OKP (1) | Ed25519 (6) | EdDSA (-8), Ed25519 (-19) |
/// | OKP (1) | Ed448 (7) | EdDSA (-8), Ed448 (-53) |
/// | RSA (3) | — | RS256 (-257), RS384 (-258), RS512 (-259), PS256 (-37), PS384 (-38), PS512 (-39), RS1 (-65535) |
///
/// AKP (7) keys with ML-DSA (-48/-49/-50) are recognised and refused with
/// ``COSEKeyError/Code/unsupportedAlgorithm``: OpenSSL 3.0 cannot verify ML-DSA. Everything else
/// is refused with a precise ``COSEKeyError``. Compressed EC points and keys carrying private
/// parameters are refused; RSA moduli must have at least 2048 bits. Unknown extra labels are
/// ignored, as COSE allows.
///
/// The algorithm always comes from the key itself (its `alg`), never from a message.
public struct COSEKey: Sendable {
    /// COSE key types (IANA "COSE Key Types").
    public enum KeyType: Int, Sendable, Hashable {
        case okp = 1
        case ec2 = 2
        case rsa = 3
        case akp = 7
    }

    /// The key type (`kty`, label 1).
    public let keyType: KeyType
    /// The algorithm (`alg`, label 3) the key is bound to.
    public let algorithm: COSEAlgorithm
    /// The same algorithm, as Crypto names it.
    public let signatureAlgorithm: SignatureAlgorithm
    /// The curve (`crv`, label -1) for EC2 and OKP keys.
    public let curve: Int?
    /// The key, held by OpenSSL.
    public let publicKey: PublicKey
    /// The COSE_Key exactly as received (store these bytes, not a re-encoding).
    public let bytes: [UInt8]

    /// Smallest RSA modulus accepted, in bits.
    public static let minimumRSABits = 2048

    /// Parses a COSE_Key from its CBOR encoding, which must be exactly one map.
    ///
    /// - Throws: ``COSEKeyError``.
    public init(bytes: [UInt8]) throws(COSEKeyError) {
        let value: CBORValue
        do {
            value = try CBORDecoder().decode(bytes)
        } catch {
            throw COSEKeyError(.malformed, "not a single well-formed CBOR item (\(error.code))")
        }
        try self.init(value, bytes: bytes)
    }

    /// Parses a COSE_Key already decoded from `bytes` (e.g. by authenticator-data parsing).
    ///
    /// - Throws: ``COSEKeyError``.
    public init(_ value: CBORValue, bytes: [UInt8]) throws(COSEKeyError) {
        guard let entries = value.mapValue else { throw COSEKeyError(.malformed, "a COSE_Key is a CBOR map") }
        for entry in entries {
            switch entry.key {
            case .unsigned, .negative, .text: continue
            default: throw COSEKeyError(.malformed, "COSE_Key labels are integers or text")
            }
        }
        guard let ktyValue = value[intKey: 1] else { throw COSEKeyError(.missingParameter, "kty (1) is required") }
        guard let kty = ktyValue.intValue, let keyType = KeyType(rawValue: kty) else {
            throw COSEKeyError(.unsupportedKeyType, "kty must be OKP (1), EC2 (2), RSA (3) or AKP (7)")
        }
        // WebAuthn L3 §6.5.1.1: the credential public key MUST contain alg.
        guard let algValue = value[intKey: 3] else { throw COSEKeyError(.missingParameter, "alg (3) is required") }
        guard let algNumber = algValue.intValue else { throw COSEKeyError(.unsupportedAlgorithm, "alg must be an integer") }
        let alg = COSEAlgorithm(algNumber)
        try Self.checkKeyOperations(value[intKey: 4])

        self.keyType = keyType
        self.algorithm = alg
        self.bytes = bytes
        switch keyType {
        case .ec2:
            (curve, signatureAlgorithm, publicKey) = try Self.ec2(value, alg)
        case .okp:
            (curve, signatureAlgorithm, publicKey) = try Self.okp(value, alg)
        case .rsa:
            curve = nil
            (signatureAlgorithm, publicKey) = try Self.rsa(value, alg)
        case .akp:
            guard [COSEAlgorithm.mlDSA44, .mlDSA65, .mlDSA87].contains(alg) else {
                throw Self.unknownOrMismatched(alg, "AKP keys here are ML-DSA (-48, -49, -50)")
            }
            guard value[intKey: -1]?.bytesValue != nil else { throw COSEKeyError(.missingParameter, "pub (-1) is required") }
            throw COSEKeyError(.unsupportedAlgorithm, "\(alg.name) cannot be verified with this OpenSSL (3.0 has no ML-DSA)")
        }
        guard publicKey.accepts(signatureAlgorithm) else { throw COSEKeyError(.invalidKey, "key does not fit \(alg.name)") }
    }

    /// Verifies `signature` over `message` with this key and its own algorithm. ECDSA signatures
    /// are DER, as WebAuthn carries them.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        publicKey.verify(signature: signature, message: message, algorithm: signatureAlgorithm)
    }

    // MARK: - Key types

    private static func ec2(_ key: CBORValue, _ alg: COSEAlgorithm) throws(COSEKeyError) -> (Int?, SignatureAlgorithm, PublicKey) {
        let expected: (crv: Int, curve: Curve, sig: SignatureAlgorithm)
        switch alg {
        case .es256: expected = (1, .p256, .es256)
        case .es384: expected = (2, .p384, .es384)
        case .es512: expected = (3, .p521, .es512)
        default: throw unknownOrMismatched(alg, "EC2 keys take ES256, ES384 or ES512")
        }
        guard let crvValue = key[intKey: -1] else { throw COSEKeyError(.missingParameter, "crv (-1) is required") }
        guard let crv = crvValue.intValue else { throw COSEKeyError(.invalidParameter, "crv must be an integer") }
        guard [1, 2, 3].contains(crv) else { throw COSEKeyError(.unsupportedCurve, "EC2 curves are P-256, P-384, P-521") }
        guard crv == expected.crv else { throw COSEKeyError(.algorithmMismatch, "\(alg.name) requires crv \(expected.crv)") }
        guard key[intKey: -4] == nil else { throw COSEKeyError(.privateKeyMaterial, "d (-4) must not be present") }
        guard let xValue = key[intKey: -2] else { throw COSEKeyError(.missingParameter, "x (-2) is required") }
        guard let yValue = key[intKey: -3] else { throw COSEKeyError(.missingParameter, "y (-3) is required") }
        guard let x = xValue.bytesValue, let y = yValue.bytesValue else {
            throw COSEKeyError(.invalidParameter, "x and y must be byte strings (compressed points are not accepted)")
        }
        let size = expected.curve.coordinateSize
        guard x.count == size, y.count == size else { throw COSEKeyError(.invalidParameter, "x and y must be \(size) bytes") }
        do {
            return (crv, expected.sig, try PublicKey.ec(curve: expected.curve, x: x, y: y))
        } catch {
            throw COSEKeyError(.invalidKey, "not a point on the curve")
        }
    }

    private static func okp(_ key: CBORValue, _ alg: COSEAlgorithm) throws(COSEKeyError) -> (Int?, SignatureAlgorithm, PublicKey) {
        guard alg == .eddsa || alg == .ed25519 || alg == .ed448 else {
            throw unknownOrMismatched(alg, "OKP keys take EdDSA (-8), Ed25519 (-19) or Ed448 (-53)")
        }
        guard let crvValue = key[intKey: -1] else { throw COSEKeyError(.missingParameter, "crv (-1) is required") }
        guard let crv = crvValue.intValue else { throw COSEKeyError(.invalidParameter, "crv must be an integer") }
        // 6 = Ed25519, 7 = Ed448 (RFC 9053 §7.2); X25519/X448 (4, 5) are key-agreement curves.
        guard crv == 6 || crv == 7 else { throw COSEKeyError(.unsupportedCurve, "the OKP curves accepted are Ed25519 (6) and Ed448 (7)") }
        // The fully-specified identifiers fix the curve (RFC 9864): Ed25519 (-19) needs 6, Ed448 (-53) needs 7.
        if alg == .ed25519, crv != 6 { throw COSEKeyError(.algorithmMismatch, "Ed25519 (-19) requires crv 6") }
        if alg == .ed448, crv != 7 { throw COSEKeyError(.algorithmMismatch, "Ed448 (-53) requires crv 7") }
        guard key[intKey: -4] == nil else { throw COSEKeyError(.privateKeyMaterial, "d (-4) must not be present") }
        guard let xValue = key[intKey: -2] else { throw COSEKeyError(.missingParameter, "x (-2) is required") }
        let size = crv == 6 ? 32 : 57
        guard let x = xValue.bytesValue, x.count == size else { throw COSEKeyError(.invalidParameter, "x must be \(size) bytes") }
        do {
            return crv == 6 ? (crv, .ed25519, try PublicKey.ed25519(x)) : (crv, .ed448, try PublicKey.ed448(x))
        } catch {
            throw COSEKeyError(.invalidKey, crv == 6 ? "not an Ed25519 key" : "not an Ed448 key")
        }
    }

    private static func rsa(_ key: CBORValue, _ alg: COSEAlgorithm) throws(COSEKeyError) -> (SignatureAlgorithm, PublicKey) {
        let rsaAlgorithms: [COSEAlgorithm] = [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .rs1]
        guard rsaAlgorithms.contains(alg), let sig = alg.signatureAlgorithm else {
            throw unknownOrMismatched(alg, "RSA keys take RS256/384/512, PS256/384/512 or RS1")
        }
        // RFC 8230 §4: -3 (d) … -12 are private-key parameters.
        for label in -12 ... -3 where key[intKey: label] != nil {
            throw COSEKeyError(.privateKeyMaterial, "private RSA parameters must not be present")
        }
        guard let nValue = key[intKey: -1] else { throw COSEKeyError(.missingParameter, "n (-1) is required") }
        guard let eValue = key[intKey: -2] else { throw COSEKeyError(.missingParameter, "e (-2) is required") }
        guard let n = nValue.bytesValue, let e = eValue.bytesValue else { throw COSEKeyError(.invalidParameter, "n and e must be byte strings") }
        let modulus = Array(n.drop { $0 == 0 })
        let exponent = Array(e.drop { $0 == 0 })
        guard let top = modulus.first else { throw COSEKeyError(.invalidParameter, "n is zero") }
        let bits = modulus.count * 8 - top.leadingZeroBitCount
        guard bits >= minimumRSABits else { throw COSEKeyError(.invalidKey, "RSA modulus below \(minimumRSABits) bits") }
        guard modulus.count <= 1024 else { throw COSEKeyError(.invalidKey, "RSA modulus too large") }
        guard !exponent.isEmpty, exponent.count <= 8, let last = exponent.last, last & 1 == 1 else {
            throw COSEKeyError(.invalidParameter, "e must be an odd integer of at most 64 bits")
        }
        do {
            return (sig, try PublicKey.rsa(modulus: modulus, exponent: exponent))
        } catch {
            throw COSEKeyError(.invalidKey, "OpenSSL refused the RSA key")
        }
    }

    // MARK: - Helpers

    /// A known algorithm on the wrong key type is a mismatch; an unknown one is unsupported.
    private static func unknownOrMismatched(_ alg: COSEAlgorithm, _ reason: String) -> COSEKeyError {
        let known = COSEAlgorithm.verifiable + [.mlDSA44, .mlDSA65, .mlDSA87]
        return known.contains(alg)
            ? COSEKeyError(.algorithmMismatch, reason)
            : COSEKeyError(.unsupportedAlgorithm, "algorithm \(alg.rawValue) is not supported")
    }

    /// key_ops (label 4), when present, must allow "verify" (2).
    private static func checkKeyOperations(_ ops: CBORValue?) throws(COSEKeyError) {
        guard let ops else { return }
        guard let list = ops.arrayValue else { throw COSEKeyError(.invalidParameter, "key_ops must be an array") }
        let allowsVerify = list.contains { $0.intValue == 2 || $0.textValue == "verify" }
        guard allowsVerify else { throw COSEKeyError(.invalidParameter, "key_ops does not allow verify") }
    }
}
