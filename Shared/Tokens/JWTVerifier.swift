import FoundationEssentials
import JSON

/// Verifies JWTs: compact form, then the key chosen by `kid` from a JWK Set (or the one
/// configured key), then the signature under the key's algorithm, then `typ` and the claims.
///
/// The order matters: nothing from the payload is looked at before the signature verifies.
/// Keys are bound to their algorithms once, when the verifier is made.
public struct JWTVerifier: Sendable {
    private enum Keys: Sendable {
        case set([String: Result<JWSVerificationKey, JOSEError>])
        case single(JWSVerificationKey)
    }

    /// What tokens must satisfy.
    public let options: JWTValidationOptions
    private let keys: Keys

    /// A verifier that picks the key by the token's `kid` in `keySet`.
    ///
    /// Tokens without `kid` are refused (`unknown_key`): with a key set, which key signed
    /// must be stated, not guessed.
    public init(keySet: JWKSet, options: JWTValidationOptions) {
        self.options = options
        self.keys = .set(keySet.verificationKeys(allowedAlgorithms: options.allowedAlgorithms))
    }

    /// A verifier with one configured key. A token's `kid`, if any, must match the key's
    /// (when the key has one).
    public init(key: JWSVerificationKey, options: JWTValidationOptions) {
        self.options = options
        self.keys = .single(key)
    }

    /// Verifies `token` at time `now`.
    ///
    /// - Throws: `JOSEError` with, in the order checked: `too_large`, `malformed`,
    ///   `unsupported_algorithm`, `unsupported_critical_header`, `unknown_key`,
    ///   `invalid_key`, `algorithm_mismatch`, `signature_invalid`, `type_mismatch`,
    ///   `invalid_claim`, `missing_claim`, `issuer_mismatch`, `audience_mismatch`, `expired`,
    ///   `not_yet_valid`, `lifetime_too_long`.
    public func verify(_ token: String, now: Date) throws(JOSEError) -> JWT {
        let jws = try JWS(
            compact: token, limits: options.limits, understoodCriticalParameters: options.understoodCriticalParameters)
        let key: JWSVerificationKey
        switch keys {
        case .set(let byKeyID):
            guard let keyID = jws.header.keyID else { throw JOSEError(.unknownKey, "JWT without kid") }
            guard let entry = byKeyID[keyID] else { throw JOSEError(.unknownKey, "no key with this kid") }
            key = try entry.get()
        case .single(let configured):
            guard options.allowedAlgorithms.contains(configured.algorithm) else {
                throw JOSEError(.unsupportedAlgorithm, "the configured key's algorithm is not allowed")
            }
            key = configured
        }
        try jws.verify(with: key)
        try options.validate(jws.header)
        let claims = try JWTClaims(jsonObject: JSONParser.parseObject(jws.payload, what: "JWT claims"))
        try options.validate(claims, now: now)
        return JWT(header: jws.header, claims: claims, payload: jws.payload)
    }
}
