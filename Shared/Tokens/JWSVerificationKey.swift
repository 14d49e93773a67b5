import Crypto

/// A public key bound to the one JWS algorithm it verifies.
///
/// The algorithm comes from the key (its type, its JWK `alg`) and the caller's allowed list,
/// never from the token: ``JWS/verify(with:)`` refuses a header whose `alg` differs
/// (`algorithm_mismatch`).
public struct JWSVerificationKey: Sendable {
    /// The key.
    public let publicKey: PublicKey
    /// The one algorithm tokens checked with this key must use.
    public let algorithm: JWSAlgorithm
    /// The key's `kid`, if it has one. A token that names another `kid` is refused.
    public let keyID: String?

    /// A configured key and its algorithm.
    ///
    /// - Throws: `invalid_key` if `algorithm` does not fit the key or an RSA key is under
    ///   2048 bits.
    public init(publicKey: PublicKey, algorithm: JWSAlgorithm, keyID: String? = nil) throws(JOSEError) {
        guard JWSAlgorithm.algorithms(for: publicKey.kind).contains(algorithm) else {
            throw JOSEError(.invalidKey, "\(algorithm) does not fit the key")
        }
        if case .rsa(let bits) = publicKey.kind, bits < 2048 {
            throw JOSEError(.invalidKey, "RSA keys under 2048 bits are refused")
        }
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.keyID = keyID
    }

    /// The verification key of a JWK, with its algorithm fixed by the JWK and `allowed`.
    ///
    /// - With a JWK `alg`: that algorithm, if it is in `allowed`.
    /// - Without: the one algorithm of the key's type that is in `allowed` (EC and Ed25519
    ///   keys have exactly one). An RSA key without `alg` while `allowed` holds several RSA
    ///   algorithms is ambiguous and refused, rather than letting the token pick.
    ///
    /// - Throws: `invalid_key` (`use` other than "sig", `key_ops` without "verify", bad key
    ///   material), `unsupported_algorithm` (no usable algorithm, or ambiguous).
    public init(jwk: JWK, allowedAlgorithms allowed: Set<JWSAlgorithm>) throws(JOSEError) {
        try self.init(jwk: jwk, publicKey: jwk.publicKey(), allowedAlgorithms: allowed)
    }

    /// As ``init(jwk:allowedAlgorithms:)`` with the key already built (by ``JWKSet``).
    init(jwk: JWK, publicKey: PublicKey, allowedAlgorithms allowed: Set<JWSAlgorithm>) throws(JOSEError) {
        if let use = jwk.use, use != "sig" { throw JOSEError(.invalidKey, "JWK use is not sig") }
        if let ops = jwk.keyOperations, !ops.contains("verify") { throw JOSEError(.invalidKey, "JWK key_ops lacks verify") }
        let algorithm: JWSAlgorithm
        if let published = jwk.algorithm {
            guard let jws = JWSAlgorithm(rawValue: published) else {
                throw JOSEError(.unsupportedAlgorithm, "JWK alg is not a supported JWS algorithm")
            }
            guard allowed.contains(jws) else { throw JOSEError(.unsupportedAlgorithm, "JWK alg \(jws) not allowed") }
            algorithm = jws
        } else {
            let candidates = JWSAlgorithm.algorithms(for: publicKey.kind).intersection(allowed)
            guard let only = candidates.first else {
                throw JOSEError(.unsupportedAlgorithm, "no allowed algorithm fits the key")
            }
            guard candidates.count == 1 else {
                throw JOSEError(
                    .unsupportedAlgorithm, "key algorithm is ambiguous: publish alg in the JWK or allow one algorithm")
            }
            algorithm = only
        }
        try self.init(publicKey: publicKey, algorithm: algorithm, keyID: jwk.keyID)
    }
}
