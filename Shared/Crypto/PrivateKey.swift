import CCryptoShims
import COpenSSL
import FoundationEssentials

/// A signing key held by OpenSSL: generated, or loaded from PEM (PKCS#8 or SEC1).
///
/// - Important: Key material never appears in descriptions or errors.
public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: the EVP_PKEY is immutable after construction; every signing
    // operation uses its own context.
    let pkey: OpaquePointer
    public let kind: PublicKey.Kind
    /// A P-256 key's EC_KEY, for ES256 through the low-level API (see CCryptoShims): the EVP
    /// path fetches the algorithm from the provider on every signature, which cost as much as
    /// the signature itself on the sign-in's session token.
    private let p256: UnsafeMutableRawPointer?

    init(pkey: OpaquePointer, kind: PublicKey.Kind) {
        self.pkey = pkey
        self.kind = kind
        p256 = kind == .ec(.p256) ? signet_ec_key_from_pkey(UnsafeMutableRawPointer(pkey)) : nil
    }

    deinit {
        if let p256 { signet_ec_key_free(p256) }
        EVP_PKEY_free(pkey)
    }

    public var description: String { "PrivateKey(\(kind))" }

    /// A fresh P-256 key.
    public static func generateP256() throws -> PrivateKey { try generateEC(.p256) }

    /// A fresh EC key on `curve`.
    public static func generateEC(_ curve: Curve) throws -> PrivateKey {
        let nid: Int32 =
            switch curve {
            case .p256: NID_X9_62_prime256v1
            case .p384: NID_secp384r1
            case .p521: NID_secp521r1
            case .secp256k1: NID_secp256k1
            }
        guard let ctx = EVP_PKEY_CTX_new_id(NID_X9_62_id_ecPublicKey, nil) else { throw CryptoError("keygen context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, nid) == 1,
            EVP_PKEY_keygen(ctx, &key) == 1, let key
        else { throw CryptoError("EC key generation failed") }
        return PrivateKey(pkey: key, kind: .ec(curve))
    }

    /// A key from PEM text.
    public static func fromPEM(_ pem: String) throws -> PrivateKey {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            guard let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let key, let kind = PublicKey.kind(of: key) else { throw CryptoError("not a supported PEM private key") }
        return PrivateKey(pkey: key, kind: kind)
    }

    /// PKCS#8 PEM (for writing a generated key to a file the operator protects).
    public func pemPKCS8() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError("BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { throw CryptoError("PEM encoding failed") }
        var ptr: UnsafeMutablePointer<CChar>?
        let n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &ptr)
        guard n > 0, let ptr else { throw CryptoError("PEM encoding failed") }
        return String(decoding: UnsafeRawBufferPointer(start: ptr, count: n), as: UTF8.self)
    }

    /// The matching public key.
    public func publicKey() throws -> PublicKey {
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d_PUBKEY(pkey, &out)
        guard n > 0, let out else { throw CryptoError("public key export failed") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return try PublicKey.fromSubjectPublicKeyInfo(Array(UnsafeBufferPointer(start: out, count: Int(n))))
    }

    /// An ECDSA signature as r‖s, each half the key's coordinate size (JOSE's form, RFC 7518
    /// §3.4), for ES256 with a P-256 key straight from OpenSSL's `ECDSA_SIG` (no DER made and
    /// parsed back: a session token's signing spends its time in the signature); other EC keys
    /// through ``sign(_:algorithm:)`` and ``ECDSASignature/raw(fromDER:size:)``.
    public func signRawECDSA(_ message: [UInt8], algorithm: SignatureAlgorithm) throws -> [UInt8] {
        guard case .ec(let curve) = kind else { throw CryptoError("not an EC key") }
        if algorithm == .es256, let p256 {
            let signature = message.withUnsafeBufferPointer { m in
                [UInt8](unsafeUninitializedCapacity: 64) { out, count in
                    count = signet_ecdsa_sign_sha256_raw(p256, m.baseAddress, m.count, out.baseAddress, 32) == 1 ? 64 : 0
                }
            }
            guard signature.count == 64 else { throw CryptoError("sign failed") }
            return signature
        }
        guard let raw = ECDSASignature.raw(fromDER: try sign(message, algorithm: algorithm), size: curve.coordinateSize) else {
            throw CryptoError("ECDSA signature could not be converted to r‖s")
        }
        return raw
    }

    /// Signs `message`. ECDSA signatures come back DER-encoded (``signRawECDSA(_:algorithm:)``
    /// or ``ECDSASignature`` for JOSE).
    public func sign(_ message: [UInt8], algorithm: SignatureAlgorithm) throws -> [UInt8] {
        if algorithm == .es256, let p256 {
            var signature = [UInt8](repeating: 0, count: 80)
            let length = message.withUnsafeBufferPointer { m in
                signature.withUnsafeMutableBufferPointer { signet_ecdsa_sign_sha256(p256, m.baseAddress, m.count, $0.baseAddress, $0.count) }
            }
            guard length > 0 else { throw CryptoError("sign failed") }
            signature.removeLast(signature.count - length)
            return signature
        }
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError("context") }
        defer { EVP_MD_CTX_free(ctx) }
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(ctx, &pctx, algorithm.digest, nil, pkey) == 1 else { throw CryptoError("sign init failed") }
        if algorithm.isPSS {
            guard EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1
            else { throw CryptoError("PSS setup failed") }
        }
        var len = 0
        let ok1 = message.withUnsafeBufferPointer { EVP_DigestSign(ctx, nil, &len, $0.baseAddress, $0.count) }
        guard ok1 == 1 else { throw CryptoError("sign failed") }
        var sig = [UInt8](repeating: 0, count: len)
        let ok2 = message.withUnsafeBufferPointer { m in
            sig.withUnsafeMutableBufferPointer { EVP_DigestSign(ctx, $0.baseAddress, &len, m.baseAddress, m.count) }
        }
        guard ok2 == 1 else { throw CryptoError("sign failed") }
        return Array(sig.prefix(len))
    }
}
