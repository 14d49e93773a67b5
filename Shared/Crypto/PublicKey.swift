import CCryptoShims
import COpenSSL
import FoundationEssentials

/// Signature algorithms Signet verifies, named as COSE (RFC 9053) and JOSE (RFC 7518) do.
public enum SignatureAlgorithm: Sendable, Hashable, CustomStringConvertible {
    /// ECDSA P-256 / SHA-256 (COSE -7). Signatures in DER unless stated otherwise.
    case es256
    /// ECDSA P-384 / SHA-384 (COSE -35).
    case es384
    /// ECDSA P-521 / SHA-512 (COSE -36).
    case es512
    /// ECDSA secp256k1 / SHA-256 (COSE -47, RFC 8812; FIDO UAF `SECP256K1_ECDSA_SHA256_*`).
    case es256k
    /// RSASSA-PKCS1-v1_5 / SHA-256 (COSE -257).
    case rs256
    /// RSASSA-PKCS1-v1_5 / SHA-384, SHA-512, SHA-1 (COSE -258, -259, -65535).
    case rs384, rs512, rs1
    /// RSASSA-PSS / SHA-256 (COSE -37), SHA-384 (-38), SHA-512 (-39).
    case ps256, ps384, ps512
    /// Ed25519 (COSE -8 "EdDSA" with OKP/Ed25519, -19 "Ed25519").
    case ed25519
    /// Ed448 (COSE -8 "EdDSA" with OKP/Ed448, -53 "Ed448"; RFC 8032 pure, empty context).
    case ed448

    public var description: String {
        switch self {
        case .es256: "ES256"
        case .es384: "ES384"
        case .es512: "ES512"
        case .es256k: "ES256K"
        case .rs256: "RS256"
        case .rs384: "RS384"
        case .rs512: "RS512"
        case .rs1: "RS1"
        case .ps256: "PS256"
        case .ps384: "PS384"
        case .ps512: "PS512"
        case .ed25519: "EdDSA"
        case .ed448: "Ed448"
        }
    }

    /// The digest, fetched once: OpenSSL 3 re-fetches the implementation on every init when
    /// given the legacy `EVP_sha256()` handles, which costs a sizeable share of a verify.
    var digest: OpaquePointer? {
        switch self {
        case .es256, .es256k, .rs256, .ps256: FetchedDigests.shared.sha256
        case .es384, .rs384, .ps384: FetchedDigests.shared.sha384
        case .es512, .rs512, .ps512: FetchedDigests.shared.sha512
        case .rs1: FetchedDigests.shared.sha1
        case .ed25519, .ed448: nil
        }
    }

    /// The ECDSA digest's length in bytes (SHA-256, -384, -512), nil for other algorithms.
    var ecdsaDigestLength: Int? {
        switch self {
        case .es256, .es256k: 32
        case .es384: 48
        case .es512: 64
        default: nil
        }
    }

    var isPSS: Bool { self == .ps256 || self == .ps384 || self == .ps512 }
    var isECDSA: Bool { self == .es256 || self == .es384 || self == .es512 || self == .es256k }
    var isRSA: Bool { [.rs256, .rs384, .rs512, .rs1, .ps256, .ps384, .ps512].contains(self) }
}

/// Named elliptic curves.
public enum Curve: Sendable, Hashable {
    case p256, p384, p521
    /// SECG secp256k1 (FIDO UAF only: no JOSE or WebAuthn key is read on it).
    case secp256k1

    var oid: String {
        switch self {
        case .p256: "1.2.840.10045.3.1.7"
        case .p384: "1.3.132.0.34"
        case .p521: "1.3.132.0.35"
        case .secp256k1: "1.3.132.0.10"
        }
    }

    /// OpenSSL's curve NID.
    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        case .p521: NID_secp521r1
        case .secp256k1: NID_secp256k1
        }
    }

    /// Coordinate length in bytes.
    public var coordinateSize: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        case .secp256k1: 32
        }
    }
}

/// Why a key or signature operation failed. Never carries key material.
public struct CryptoError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A public key held by OpenSSL, built from its parts or from DER: an `EVP_PKEY`, or for an EC
/// key built from its point (``ec(curve:x:y:)``) an `EC_KEY` alone.
public final class PublicKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY and EC_KEY are immutable after construction and OpenSSL
    // allows concurrent use of a key in separate contexts (ECDSA_verify reads the EC_KEY only).
    /// The EVP_PKEY: every key but those from ``ec(curve:x:y:)``, whose every operation
    /// (ECDSA verification, the SubjectPublicKeyInfo) goes through ``ecKey`` instead.
    let pkey: OpaquePointer?
    /// For EC keys, the EC_KEY that ECDSA verification (DER and raw) uses directly (see
    /// CCryptoShims).
    private let ecKey: UnsafeMutableRawPointer?

    public enum Kind: Sendable, Equatable {
        case ec(Curve)
        case rsa(bits: Int)
        case ed25519
        case ed448
    }

    public let kind: Kind

    init(pkey: OpaquePointer, kind: Kind) {
        self.pkey = pkey
        self.kind = kind
        if case .ec = kind {
            ecKey = signet_ec_key_from_pkey(UnsafeMutableRawPointer(pkey))
        } else {
            ecKey = nil
        }
    }

    /// An EC key held by its EC_KEY alone (from ``signet_ec_public_key_from_point``).
    private init(ecKey: UnsafeMutableRawPointer, curve: Curve) {
        pkey = nil
        self.ecKey = ecKey
        kind = .ec(curve)
    }

    deinit {
        if let ecKey { signet_ec_key_free(ecKey) }
        if let pkey { EVP_PKEY_free(pkey) }
    }

    /// An EC key from its affine coordinates (big-endian, each of the curve's coordinate size).
    ///
    /// Built as an `EC_KEY` on the curve's shared group from the uncompressed point, without
    /// OpenSSL 3's decoders (a DER SubjectPublicKeyInfo through `d2i_PUBKEY` cost about 240 µs
    /// for P-256 here, 2.7 verifications; `signet-bench key-parse` prints both).
    ///
    /// - Throws: ``CryptoError`` for coordinates of another length, a coordinate not below the
    ///   field's prime, or a point not on the curve.
    public static func ec(curve: Curve, x: [UInt8], y: [UInt8]) throws -> PublicKey {
        guard x.count == curve.coordinateSize, y.count == curve.coordinateSize else {
            throw CryptoError("EC coordinates have the wrong length")
        }
        return try ec(curve: curve, point: [0x04] + x + y)
    }

    /// An EC key from its point in the uncompressed X9.62 form, 0x04 ‖ x ‖ y (checked by the C
    /// side: tests give it other forms directly).
    ///
    /// - Throws: ``CryptoError`` for another form (compressed, hybrid, infinity) or length, a
    ///   coordinate not below the field's prime, or a point not on the curve.
    static func ec(curve: Curve, point: [UInt8]) throws -> PublicKey {
        let key = point.withUnsafeBufferPointer { signet_ec_public_key_from_point(curve.nid, $0.baseAddress, $0.count) }
        guard let key else { throw CryptoError("not a valid public key") }
        return PublicKey(ecKey: key, curve: curve)
    }

    /// An RSA key from its modulus and public exponent (big-endian), imported through
    /// `EVP_PKEY_fromdata` rather than a SubjectPublicKeyInfo through OpenSSL 3's decoders
    /// (about 190 µs here, seven RS256 verifications; `signet-bench key-parse rsa2048`).
    public static func rsa(modulus n: [UInt8], exponent e: [UInt8]) throws -> PublicKey {
        guard !n.isEmpty, !e.isEmpty, n.count <= 1024 else { throw CryptoError("RSA parameters out of range") }
        let key = n.withUnsafeBufferPointer { n in
            e.withUnsafeBufferPointer { e in signet_rsa_public_key(n.baseAddress, n.count, e.baseAddress, e.count) }
        }
        guard let key else { throw CryptoError("not a valid public key") }
        let pkey = OpaquePointer(key)
        return PublicKey(pkey: pkey, kind: .rsa(bits: Int(EVP_PKEY_get_bits(pkey))))
    }

    /// An Ed25519 key from its 32 raw bytes.
    public static func ed25519(_ raw: [UInt8]) throws -> PublicKey {
        guard raw.count == 32 else { throw CryptoError("Ed25519 keys are 32 bytes") }
        return try rawPublicKey(raw, type: EVP_PKEY_ED25519, kind: .ed25519)
    }

    /// An Ed448 key from its 57 raw bytes (RFC 8032 §5.2.5).
    public static func ed448(_ raw: [UInt8]) throws -> PublicKey {
        guard raw.count == 57 else { throw CryptoError("Ed448 keys are 57 bytes") }
        return try rawPublicKey(raw, type: EVP_PKEY_ED448, kind: .ed448)
    }

    /// An EdDSA key from its raw bytes through `EVP_PKEY_new_raw_public_key` (the bytes are
    /// copied, as the SubjectPublicKeyInfo decoder did; the point is decoded at verification),
    /// rather than OpenSSL 3's decoders (about 140 µs here for Ed25519, one verification).
    private static func rawPublicKey(_ raw: [UInt8], type: Int32, kind: Kind) throws -> PublicKey {
        let key = raw.withUnsafeBufferPointer { EVP_PKEY_new_raw_public_key(type, nil, $0.baseAddress, $0.count) }
        guard let key else {
            ERR_clear_error()
            throw CryptoError("not a valid public key")
        }
        return PublicKey(pkey: key, kind: kind)
    }

    /// A key from DER SubjectPublicKeyInfo (as in certificates and `i2d_PUBKEY`).
    ///
    /// An EC key on a named curve with an uncompressed point, in DER, is built from its point
    /// as ``ec(curve:x:y:)`` builds it; everything else (compressed points, other key types,
    /// explicit curve parameters, other encodings), and an EC point that build refuses, goes
    /// through `d2i_PUBKEY` as before, so that what is accepted does not change.
    public static func fromSubjectPublicKeyInfo(_ der: [UInt8], expected: Kind? = nil) throws -> PublicKey {
        if let curve = ECSubjectPublicKeyInfo.curve(of: der), expected == nil || expected == .ec(curve),
            let key = try? ec(curve: curve, point: Array(der.suffix(ECSubjectPublicKeyInfo.pointLength(curve))))
        {
            return key
        }
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_PUBKEY(nil, &p, buf.count)
        }
        guard let key else { throw CryptoError("not a valid public key") }
        guard let kind = PublicKey.kind(of: key) else {
            EVP_PKEY_free(key)
            throw CryptoError("unsupported key type")
        }
        if let expected, expected != kind {
            if case .rsa = expected, case .rsa = kind {} else {
                EVP_PKEY_free(key)
                throw CryptoError("unexpected key type")
            }
        }
        return PublicKey(pkey: key, kind: kind)
    }

    static func kind(of key: OpaquePointer) -> Kind? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: return .rsa(bits: Int(EVP_PKEY_get_bits(key)))
        case EVP_PKEY_ED25519: return .ed25519
        case EVP_PKEY_ED448: return .ed448
        case NID_X9_62_id_ecPublicKey:
            var name = [CChar](repeating: 0, count: 64)
            var len = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &len) == 1 else { return nil }
            switch String(decoding: name.prefix(len).map { UInt8(bitPattern: $0) }, as: UTF8.self) {
            case "prime256v1", "P-256": return .ec(.p256)
            case "secp384r1", "P-384": return .ec(.p384)
            case "secp521r1", "P-521": return .ec(.p521)
            case "secp256k1": return .ec(.secp256k1)
            default: return nil
            }
        default: return nil
        }
    }

    /// The DER SubjectPublicKeyInfo (an EC key from its point: the named curve and the
    /// uncompressed point).
    public var subjectPublicKeyInfo: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let n: Int
        if let pkey {
            n = Int(i2d_PUBKEY(pkey, &out))
        } else if let ecKey {
            // Encoded from the EC_KEY when asked (attestation checks, JWK export: not on a
            // sign-in's path), rather than an EVP_PKEY kept beside every key.
            n = signet_ec_public_key_spki(ecKey, &out)
        } else {
            n = 0
        }
        guard n > 0, let out else { return [] }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: n))
    }

    /// Whether `algorithm` can be used with this key.
    public func accepts(_ algorithm: SignatureAlgorithm) -> Bool {
        switch (kind, algorithm) {
        case (.ec(.p256), .es256), (.ec(.p384), .es384), (.ec(.p521), .es512), (.ec(.secp256k1), .es256k), (.ed25519, .ed25519), (.ed448, .ed448):
            true
        case (.rsa(let bits), _): algorithm.isRSA && bits >= 1024
        default: false
        }
    }

    /// Verifies `signature` over `message`. ECDSA signatures are DER (`ECDSA-Sig-Value`).
    ///
    /// - Returns: false for a wrong signature, a malformed one, or an algorithm that does not
    ///   fit the key; never throws.
    public func verify(signature: [UInt8], message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        guard accepts(algorithm), !signature.isEmpty, signature.count <= 1024 else { return false }
        // ECDSA (every curve) through the key's EC_KEY and ECDSA_verify, where the EVP path
        // below ends too, without what EVP_DigestVerifyInit does on every call (two contexts
        // allocated, the signature and digest implementations fetched): about 50,000
        // instructions per verification (callgrind, P-384), and SHA256()'s own fetch for ES256.
        if algorithm.isECDSA, let ecKey, let length = algorithm.ecdsaDigestLength {
            return signature.withUnsafeBufferPointer { sig in
                message.withUnsafeBufferPointer { msg in
                    signet_ecdsa_verify_der(ecKey, length, msg.baseAddress, msg.count, sig.baseAddress, sig.count) == 1
                }
            }
        }
        guard let pkey, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(ctx, &pctx, algorithm.digest, nil, pkey) == 1 else { return false }
        if algorithm.isPSS {
            guard EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1
            else { return false }
        }
        let rc = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(ctx, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        ERR_clear_error()
        return rc == 1
    }
}

extension PublicKey {
    /// Verifies a raw ECDSA signature, r‖s with halves of the curve order's length (JOSE, FIDO
    /// UAF `*_raw`), over `message` with ES256, ES384 or ES512, without a DER round trip.
    ///
    /// - Returns: false for a wrong or malformed signature (a half of another length, r or s
    ///   outside [1, n-1]), or an algorithm that does not fit the key; never throws.
    public func verifyRawECDSA(signature: [UInt8], message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        guard algorithm.isECDSA, accepts(algorithm), let ecKey, let md = algorithm.digest, !signature.isEmpty, signature.count <= 1024 else {
            return false
        }
        return signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                signet_ecdsa_verify_raw(ecKey, UnsafeRawPointer(md), msg.baseAddress, msg.count, sig.baseAddress, sig.count) == 1
            }
        }
    }
}

/// Conversions between ECDSA signature encodings: DER (`ECDSA-Sig-Value`, WebAuthn, X.509)
/// and fixed-size r‖s (JOSE).
public enum ECDSASignature {
    /// r‖s of `size`-byte halves → DER.
    public static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count % 2 == 0, !raw.isEmpty else { return nil }
        let half = raw.count / 2
        return DER.sequence(DER.unsignedInteger(Array(raw[..<half])), DER.unsignedInteger(Array(raw[half...])))
    }

    /// DER → r‖s with halves of `size` bytes; nil when malformed or too large.
    public static func raw(fromDER der: [UInt8], size: Int) -> [UInt8]? {
        var i = 0
        func readTLV(_ tag: UInt8) -> [UInt8]? {
            guard i < der.count, der[i] == tag else { return nil }
            i += 1
            guard i < der.count else { return nil }
            var len = Int(der[i])
            i += 1
            if len & 0x80 != 0 {
                let n = len & 0x7F
                guard n >= 1, n <= 2, i + n <= der.count else { return nil }
                len = 0
                for _ in 0..<n {
                    len = len << 8 | Int(der[i])
                    i += 1
                }
            }
            guard i + len <= der.count else { return nil }
            defer { i += len }
            return Array(der[i..<(i + len)])
        }
        guard let seq = readTLV(0x30), i == der.count else { return nil }
        let inner = seq
        var j = 0
        func readInt() -> [UInt8]? {
            guard j + 2 <= inner.count, inner[j] == 0x02 else { return nil }
            let len = Int(inner[j + 1])
            guard len < 0x80, j + 2 + len <= inner.count, len > 0 else { return nil }
            let v = Array(inner[(j + 2)..<(j + 2 + len)])
            j += 2 + len
            return v
        }
        guard let r = readInt(), let s = readInt(), j == inner.count else { return nil }
        func pad(_ v: [UInt8]) -> [UInt8]? {
            let t = Array(v.drop { $0 == 0 })
            guard t.count <= size else { return nil }
            return [UInt8](repeating: 0, count: size - t.count) + t
        }
        guard let pr = pad(r), let ps = pad(s) else { return nil }
        return pr + ps
    }
}

/// The DER SubjectPublicKeyInfo of an EC key on a named curve with an uncompressed point (RFC
/// 5480 §2): a fixed prefix per curve, then the point.
enum ECSubjectPublicKeyInfo {
    static func pointLength(_ curve: Curve) -> Int { 1 + 2 * curve.coordinateSize }

    /// Each curve's prefix: SEQUENCE { SEQUENCE { id-ecPublicKey, the curve }, BIT STRING
    /// (no unused bits) 0x04 }, the point's first byte included.
    private static let prefixes: [(Curve, [UInt8])] = [Curve.p256, .p384, .p521, .secp256k1].map { curve in
        let length = pointLength(curve)
        let spki = DER.sequence(
            DER.sequence(DER.oid("1.2.840.10045.2.1"), DER.oid(curve.oid)), DER.bitString([0x04] + [UInt8](repeating: 0, count: length - 1)))
        return (curve, Array(spki.prefix(spki.count - length + 1)))
    }

    /// The curve when `der` is exactly such a SubjectPublicKeyInfo, else nil.
    static func curve(of der: [UInt8]) -> Curve? {
        for (curve, prefix) in prefixes where der.count == prefix.count - 1 + pointLength(curve) && der.starts(with: prefix) {
            return curve
        }
        return nil
    }
}

/// Explicitly fetched digest implementations, kept for the life of the process.
final class FetchedDigests: @unchecked Sendable {
    // @unchecked Sendable: fetched once at initialisation and never mutated; OpenSSL allows
    // concurrent use of an EVP_MD.
    static let shared = FetchedDigests()
    let sha1 = EVP_MD_fetch(nil, "SHA1", nil)
    let sha256 = EVP_MD_fetch(nil, "SHA256", nil)
    let sha384 = EVP_MD_fetch(nil, "SHA384", nil)
    let sha512 = EVP_MD_fetch(nil, "SHA512", nil)
}
