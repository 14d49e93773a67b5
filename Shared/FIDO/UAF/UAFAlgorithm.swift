import Crypto

/// A UAF authentication algorithm and signature encoding (UAF Registry §3.6.1,
/// `UAF_ALG_SIGN_*`), as ASSERTION_INFO's `signatureAlgAndEncoding` names it.
public struct UAFSignatureAlgorithm: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let secp256r1ECDSASHA256Raw = UAFSignatureAlgorithm(rawValue: 0x0001)
    public static let secp256r1ECDSASHA256DER = UAFSignatureAlgorithm(rawValue: 0x0002)
    public static let rsassaPSSSHA256Raw = UAFSignatureAlgorithm(rawValue: 0x0003)
    public static let rsassaPSSSHA256DER = UAFSignatureAlgorithm(rawValue: 0x0004)
    public static let secp256k1ECDSASHA256Raw = UAFSignatureAlgorithm(rawValue: 0x0005)
    public static let secp256k1ECDSASHA256DER = UAFSignatureAlgorithm(rawValue: 0x0006)
    public static let sm2SM3Raw = UAFSignatureAlgorithm(rawValue: 0x0007)
    public static let rsaEMSAPKCS1SHA256Raw = UAFSignatureAlgorithm(rawValue: 0x0008)
    public static let rsaEMSAPKCS1SHA256DER = UAFSignatureAlgorithm(rawValue: 0x0009)
    public static let rsassaPSSSHA384Raw = UAFSignatureAlgorithm(rawValue: 0x000A)
    public static let rsassaPSSSHA512Raw = UAFSignatureAlgorithm(rawValue: 0x000B)
    public static let rsassaPKCSv15SHA256Raw = UAFSignatureAlgorithm(rawValue: 0x000C)
    public static let rsassaPKCSv15SHA384Raw = UAFSignatureAlgorithm(rawValue: 0x000D)
    public static let rsassaPKCSv15SHA512Raw = UAFSignatureAlgorithm(rawValue: 0x000E)
    public static let rsassaPKCSv15SHA1Raw = UAFSignatureAlgorithm(rawValue: 0x000F)
    public static let secp384r1ECDSASHA384Raw = UAFSignatureAlgorithm(rawValue: 0x0010)
    public static let secp521r1ECDSASHA512Raw = UAFSignatureAlgorithm(rawValue: 0x0011)
    public static let ed25519EdDSASHA512Raw = UAFSignatureAlgorithm(rawValue: 0x0012)

    /// The algorithms Signet verifies: all of the registry's but SM2 (out of scope) and the
    /// SHA-1 one (retired). secp256k1 keys are ECC X9.62 raw or DER (COSE has no EC2 curve for
    /// them in Signet's COSE reader).
    public static let supported: [UAFSignatureAlgorithm] = [
        .secp256r1ECDSASHA256Raw, .secp256r1ECDSASHA256DER, .rsassaPSSSHA256Raw, .rsassaPSSSHA256DER,
        .secp256k1ECDSASHA256Raw, .secp256k1ECDSASHA256DER,
        .rsaEMSAPKCS1SHA256Raw, .rsaEMSAPKCS1SHA256DER, .rsassaPSSSHA384Raw, .rsassaPSSSHA512Raw,
        .rsassaPKCSv15SHA256Raw, .rsassaPKCSv15SHA384Raw, .rsassaPKCSv15SHA512Raw,
        .secp384r1ECDSASHA384Raw, .secp521r1ECDSASHA512Raw, .ed25519EdDSASHA512Raw,
    ]

    /// The metadata statement's name for it (`secp256r1_ecdsa_sha256_raw`, MDS3 §3.6.1).
    public var metadataName: String {
        switch rawValue {
        case 0x0001: "secp256r1_ecdsa_sha256_raw"
        case 0x0002: "secp256r1_ecdsa_sha256_der"
        case 0x0003: "rsassa_pss_sha256_raw"
        case 0x0004: "rsassa_pss_sha256_der"
        case 0x0005: "secp256k1_ecdsa_sha256_raw"
        case 0x0006: "secp256k1_ecdsa_sha256_der"
        case 0x0007: "sm2_sm3_raw"
        case 0x0008: "rsa_emsa_pkcs1_sha256_raw"
        case 0x0009: "rsa_emsa_pkcs1_sha256_der"
        case 0x000A: "rsassa_pss_sha384_raw"
        case 0x000B: "rsassa_pss_sha512_raw"
        case 0x000C: "rsassa_pkcsv15_sha256_raw"
        case 0x000D: "rsassa_pkcsv15_sha384_raw"
        case 0x000E: "rsassa_pkcsv15_sha512_raw"
        case 0x000F: "rsassa_pkcsv15_sha1_raw"
        case 0x0010: "secp384r1_ecdsa_sha384_raw"
        case 0x0011: "secp521r1_ecdsa_sha512_raw"
        case 0x0012: "ed25519_eddsa_sha512_raw"
        default: "unknown_\(rawValue)"
        }
    }

    public var description: String { metadataName }

    /// The OpenSSL-side algorithm, nil when Signet cannot verify it.
    var cryptoAlgorithm: SignatureAlgorithm? {
        switch rawValue {
        case 0x0001, 0x0002: .es256
        case 0x0003, 0x0004: .ps256
        case 0x0005, 0x0006: .es256k
        case 0x0008, 0x0009, 0x000C: .rs256
        case 0x000A: .ps384
        case 0x000B: .ps512
        case 0x000D: .rs384
        case 0x000E: .rs512
        case 0x0010: .es384
        case 0x0011: .es512
        case 0x0012: .ed25519
        default: nil
        }
    }

    /// The hash of the algorithm, which also hashes fcParams into FinalChallengeHash and the
    /// transaction content into TransactionContentHash (UAF Protocol §3.4.6.5 step 4.c,
    /// §3.5.7.5).
    var digest: AttestationDigest? {
        switch rawValue {
        case 0x0001...0x0009, 0x000C: .sha256
        case 0x000A, 0x000D, 0x0010: .sha384
        case 0x000B, 0x000E, 0x0011, 0x0012: .sha512
        default: nil
        }
    }

    /// The hash of `data` with this algorithm's hash function.
    public func hash(_ data: [UInt8]) -> [UInt8]? { digest?.hash(data) }

    /// The curve of an ECDSA algorithm (for raw X9.62 keys).
    var curve: Curve? {
        switch rawValue {
        case 0x0001, 0x0002: .p256
        case 0x0005, 0x0006: .secp256k1
        case 0x0010: .p384
        case 0x0011: .p521
        default: nil
        }
    }

    /// ECDSA with a raw r‖s signature.
    var isRawECDSA: Bool { [0x0001, 0x0005, 0x0010, 0x0011].contains(rawValue) }

    /// The signature as OpenSSL verifies it: ECDSA raw r‖s → DER; RSA "DER" encodings are an
    /// ASN.1 OCTET STRING holding the raw signature (UAF Registry §3.6.1, "not BIT STRING!").
    func normalizedSignature(_ signature: [UInt8]) -> [UInt8]? {
        switch rawValue {
        case 0x0001, 0x0005, 0x0010, 0x0011:
            guard let curve, signature.count == 2 * curve.coordinateSize else { return nil }
            return ECDSASignature.der(fromRaw: signature)
        case 0x0002, 0x0006:
            // Re-encode through raw so that only a canonical, in-range DER signature passes.
            guard let raw = ECDSASignature.raw(fromDER: signature, size: 32) else { return nil }
            return ECDSASignature.der(fromRaw: raw)
        case 0x0004, 0x0009:
            return Self.octetStringContents(signature)
        default:
            return signature
        }
    }

    /// The contents of one DER OCTET STRING spanning all of `der`.
    static func octetStringContents(_ der: [UInt8]) -> [UInt8]? {
        guard der.count >= 2, der[0] == 0x04 else { return nil }
        var length = Int(der[1])
        var start = 2
        if length & 0x80 != 0 {
            let n = length & 0x7F
            guard (1...2).contains(n), der.count >= 2 + n else { return nil }
            length = 0
            for k in 0..<n { length = length << 8 | Int(der[2 + k]) }
            // DER: the shortest form.
            guard length >= 0x80, n == 1 || length > 0xFF else { return nil }
            start = 2 + n
        }
        guard start + length == der.count else { return nil }
        return Array(der[start...])
    }
}

/// A UAF public key encoding (UAF Registry §3.6.2, `UAF_ALG_KEY_*`).
public struct UAFKeyEncoding: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Uncompressed X9.62 point `04 ‖ X ‖ Y`.
    public static let eccX962Raw = UAFKeyEncoding(rawValue: 0x0100)
    /// DER SubjectPublicKeyInfo of an EC key.
    public static let eccX962DER = UAFKeyEncoding(rawValue: 0x0101)
    /// Modulus (256 bytes, big-endian) ‖ public exponent (4 bytes, big-endian).
    public static let rsa2048Raw = UAFKeyEncoding(rawValue: 0x0102)
    /// DER SubjectPublicKeyInfo (or PKCS #1 RSAPublicKey) of a 2048-bit RSA key.
    public static let rsa2048DER = UAFKeyEncoding(rawValue: 0x0103)
    /// A COSE_Key (RFC 9052 §7).
    public static let cose = UAFKeyEncoding(rawValue: 0x0104)

    public var description: String {
        switch rawValue {
        case 0x0100: "ecc_x962_raw"
        case 0x0101: "ecc_x962_der"
        case 0x0102: "rsa_2048_raw"
        case 0x0103: "rsa_2048_der"
        case 0x0104: "cose"
        default: "unknown_\(rawValue)"
        }
    }
}

/// A UAF authenticator's public key: its bytes in their encoding, parsed for the signature
/// algorithm the authenticator declared.
public struct UAFPublicKey: Sendable {
    public let encoding: UAFKeyEncoding
    public let algorithm: UAFSignatureAlgorithm
    /// The key as sent (stored with the registration).
    public let bytes: [UInt8]
    let key: PublicKey
    let cryptoAlgorithm: SignatureAlgorithm

    /// Parses `bytes` in `encoding` for `algorithm`.
    ///
    /// - Throws: ``UAFError/Code/unsupportedAlgorithm`` for an algorithm Signet cannot verify or
    ///   a key that does not fit it; ``UAFError/Code/malformedPublicKey`` for bytes that are not
    ///   a key in the declared encoding.
    public init(bytes: [UInt8], encoding: UAFKeyEncoding, algorithm: UAFSignatureAlgorithm) throws(UAFError) {
        let rule = "Registry §3.6"
        guard let cryptoAlgorithm = algorithm.cryptoAlgorithm else {
            throw UAFError(.unsupportedAlgorithm, rule: rule, "signature algorithm \(algorithm.rawValue) is not supported")
        }
        let key: PublicKey
        do {
            switch encoding {
            case .eccX962Raw:
                guard let curve = algorithm.curve else {
                    throw UAFError(.unsupportedAlgorithm, rule: rule, "a raw X9.62 key with a non-ECDSA algorithm")
                }
                let size = curve.coordinateSize
                guard bytes.count == 1 + 2 * size, bytes[0] == 0x04 else {
                    throw UAFError(.malformedPublicKey, rule: rule, "raw X9.62 key is not an uncompressed point of the curve")
                }
                key = try PublicKey.ec(curve: curve, x: Array(bytes[1...size]), y: Array(bytes[(1 + size)...]))
            case .eccX962DER:
                guard let curve = algorithm.curve else {
                    throw UAFError(.unsupportedAlgorithm, rule: rule, "a DER EC key with a non-ECDSA algorithm")
                }
                key = try PublicKey.fromSubjectPublicKeyInfo(bytes, expected: .ec(curve))
            case .rsa2048Raw:
                guard bytes.count == 260 else {
                    throw UAFError(.malformedPublicKey, rule: rule, "raw RSA 2048 key is not 256 + 4 bytes")
                }
                key = try PublicKey.rsa(modulus: Array(bytes[..<256]), exponent: Array(bytes[256...]))
            case .rsa2048DER:
                if let spki = try? PublicKey.fromSubjectPublicKeyInfo(bytes) {
                    key = spki
                } else {
                    // PKCS #1 RSAPublicKey, wrapped into a SubjectPublicKeyInfo.
                    let wrapped = DER.sequence(DER.sequence(DER.oid("1.2.840.113549.1.1.1"), [0x05, 0x00]), DER.bitString(bytes))
                    key = try PublicKey.fromSubjectPublicKeyInfo(wrapped)
                }
            case .cose:
                let cose: COSEKey
                do { cose = try COSEKey(bytes: bytes) } catch {
                    throw UAFError(.malformedPublicKey, rule: rule, "COSE key: \(error.code)")
                }
                guard cose.signatureAlgorithm == cryptoAlgorithm else {
                    throw UAFError(.unsupportedAlgorithm, rule: rule, "COSE key algorithm is not the declared signature algorithm")
                }
                key = cose.publicKey
            default:
                throw UAFError(.unsupportedAlgorithm, rule: rule, "public key encoding \(encoding.rawValue) is not supported")
            }
        } catch let error as UAFError {
            throw error
        } catch {
            throw UAFError(.malformedPublicKey, rule: rule, "key does not parse as \(encoding)")
        }
        switch (encoding, key.kind) {
        case (.rsa2048Raw, .rsa(let bits)), (.rsa2048DER, .rsa(let bits)):
            guard bits == 2048 else { throw UAFError(.malformedPublicKey, rule: rule, "RSA key is \(bits) bits, not 2048") }
        default: break
        }
        guard key.accepts(cryptoAlgorithm) else {
            throw UAFError(.unsupportedAlgorithm, rule: rule, "key does not fit \(algorithm)")
        }
        self.encoding = encoding
        self.algorithm = algorithm
        self.bytes = bytes
        self.key = key
        self.cryptoAlgorithm = cryptoAlgorithm
    }

    /// Verifies `signature` (in the algorithm's encoding) over `message`; never throws.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        // Raw r‖s ECDSA straight to OpenSSL (ECDSA_do_verify), without building DER for it to
        // parse again: on the path of every UAF sign-in.
        if algorithm.isRawECDSA {
            guard let curve = algorithm.curve, signature.count == 2 * curve.coordinateSize else { return false }
            return key.verifyRawECDSA(signature: signature, message: message, algorithm: cryptoAlgorithm)
        }
        guard let normalized = algorithm.normalizedSignature(signature) else { return false }
        return key.verify(signature: normalized, message: message, algorithm: cryptoAlgorithm)
    }
}
