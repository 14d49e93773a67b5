import Crypto
import JSON

/// A JWK Set (RFC 7517 §5): `{"keys":[…]}`, as published at `/.well-known/jwks.json`.
///
/// Bounded: at most ``maximumKeyCount`` keys and ``maximumSize`` bytes of JSON. Keys of a
/// type or curve Signet does not handle (`oct`, X25519, Ed448…) are skipped as RFC 7517 §5
/// asks, and counted in ``ignoredKeyCount``; a key of a supported type that is malformed
/// (bad base64url, point off the curve, private members) fails the whole set, because it
/// points at a broken or tampered document. Two keys with the same `kid` fail it too: lookup
/// by `kid` must be unambiguous.
public struct JWKSet: Sendable {
    /// The most keys a set may hold (rotation keeps a handful; peers publish a few).
    public static let maximumKeyCount = 64
    /// The largest JWK Set text accepted, in bytes.
    public static let maximumSize = 128 * 1024

    /// The keys, in document order.
    public let keys: [JWK]
    /// How many entries were skipped as unsupported when parsing.
    public let ignoredKeyCount: Int

    /// Each key built once, so that verification does not rebuild OpenSSL keys per token.
    private let publicKeys: [PublicKey]
    private let indexByKeyID: [String: Int]

    /// A set of keys.
    ///
    /// - Throws: `too_large` over ``maximumKeyCount``; `invalid_key` for a key that does not
    ///   validate (key material, an `alg` that does not fit, `kid` length) or a duplicate `kid`.
    public init(keys: [JWK]) throws(JOSEError) {
        var built: [(JWK, PublicKey)] = []
        for jwk in keys { built.append((jwk, try jwk.validatedPublicKey())) }
        try self.init(validated: built, ignored: 0)
    }

    private init(validated: [(JWK, PublicKey)], ignored: Int) throws(JOSEError) {
        guard validated.count <= JWKSet.maximumKeyCount else {
            throw JOSEError(.tooLarge, "JWK Set over \(JWKSet.maximumKeyCount) keys")
        }
        var index: [String: Int] = [:]
        for (i, entry) in validated.enumerated() {
            guard let kid = entry.0.keyID else { continue }
            guard index.updateValue(i, forKey: kid) == nil else { throw JOSEError(.invalidKey, "JWK Set has a duplicate kid") }
        }
        self.keys = validated.map(\.0)
        self.publicKeys = validated.map(\.1)
        self.indexByKeyID = index
        self.ignoredKeyCount = ignored
    }

    /// Parses a JWK Set document.
    ///
    /// - Throws: `too_large`, `malformed` (not an object, `keys` missing or not an array of
    ///   objects), and the errors of ``JWK/init(jsonObject:)`` other than `unsupported_key`.
    public init(json: [UInt8]) throws(JOSEError) {
        guard json.count <= JWKSet.maximumSize else { throw JOSEError(.tooLarge, "JWK Set over \(JWKSet.maximumSize) bytes") }
        let document = try JSONParser.parseObject(json, what: "JWK Set")
        guard case .array(let entries)? = document["keys"] else { throw JOSEError(.malformed, "JWK Set without a keys array") }
        guard entries.count <= JWKSet.maximumKeyCount else {
            throw JOSEError(.tooLarge, "JWK Set over \(JWKSet.maximumKeyCount) keys")
        }
        var validated: [(JWK, PublicKey)] = []
        var ignored = 0
        for entry in entries {
            guard case .object(let members) = entry else { throw JOSEError(.malformed, "JWK Set entry is not an object") }
            do throws(JOSEError) {
                validated.append(try JWK.validated(members))
            } catch where error.code == .unsupportedKey {
                ignored += 1
            }
        }
        try self.init(validated: validated, ignored: ignored)
    }

    /// Parses a JWK Set document.
    public init(json: String) throws(JOSEError) { try self.init(json: Array(json.utf8)) }

    /// The key with `kid`, if any.
    public func key(withID keyID: String) -> JWK? { indexByKeyID[keyID].map { keys[$0] } }

    /// The key with `kid`, bound to its algorithm (see
    /// ``JWSVerificationKey/init(jwk:allowedAlgorithms:)``).
    ///
    /// - Throws: `unknown_key` when no key has that `kid`; otherwise the errors of
    ///   ``JWSVerificationKey/init(jwk:allowedAlgorithms:)``.
    public func verificationKey(withID keyID: String, allowedAlgorithms: Set<JWSAlgorithm>) throws(JOSEError)
        -> JWSVerificationKey
    {
        guard let i = indexByKeyID[keyID] else { throw JOSEError(.unknownKey, "no key with this kid") }
        return try JWSVerificationKey(jwk: keys[i], publicKey: publicKeys[i], allowedAlgorithms: allowedAlgorithms)
    }

    /// Every key that has a `kid`, bound to its algorithm, or the reason it cannot verify.
    func verificationKeys(allowedAlgorithms: Set<JWSAlgorithm>) -> [String: Result<JWSVerificationKey, JOSEError>] {
        indexByKeyID.mapValues { i in
            Result { () throws(JOSEError) in
                try JWSVerificationKey(jwk: keys[i], publicKey: publicKeys[i], allowedAlgorithms: allowedAlgorithms)
            }
        }
    }

    /// The document: `{"keys":[…]}`, compact, each key's members sorted.
    public var jsonString: String { JSONValue.object(["keys": .array(keys.map { .object($0.jsonObject) })]).jsonString }
}
