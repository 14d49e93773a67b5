import Crypto
import JSON

/// Signs JWTs with ES256 under a P-256 private key and its `kid`.
///
/// The header is `{"alg":"ES256","typ":"JWT","kid":…}` (another `typ`, such as `tc+jwt`, can
/// be given per token for explicit typing).
public struct JWTSigner: Sendable {
    /// The algorithm: ES256, Signet's default (see ARCHITECTURE.md, "Tokens and keys").
    public let algorithm: JWSAlgorithm = .es256
    /// The `kid` put in every header.
    public let keyID: String
    /// The public half, as published in the JWKS (`kid`, `use: sig`, `alg: ES256`).
    public let publicJWK: JWK
    /// The public half, bound to ES256, for verifying this signer's tokens.
    public let verificationKey: JWSVerificationKey
    private let privateKey: PrivateKey
    /// The header of a `typ: JWT` token, encoded once: every token but a few kinds has it.
    private let encodedJWTHeader: [UInt8]

    /// A signer for a P-256 key.
    ///
    /// - Parameters:
    ///   - privateKey: a P-256 key.
    ///   - keyID: the `kid`; by default the key's RFC 7638 thumbprint, so that every replica
    ///     loading the same key file publishes the same `kid`.
    /// - Throws: `unsupported_key` for a key that is not P-256; `invalid_key` if its public
    ///   half cannot be exported.
    public init(privateKey: PrivateKey, keyID: String? = nil) throws(JOSEError) {
        guard privateKey.kind == .ec(.p256) else { throw JOSEError(.unsupportedKey, "ES256 signing needs a P-256 key") }
        let publicKey: PublicKey
        do {
            publicKey = try privateKey.publicKey()
        } catch {
            throw JOSEError(.invalidKey, "public key could not be derived")
        }
        let anonymous = try JWK(publicKey: publicKey, algorithm: .es256)
        let kid = keyID ?? anonymous.thumbprintBase64URL
        guard !kid.isEmpty, kid.utf8.count <= JWK.maximumKeyIDLength else { throw JOSEError(.invalidKey, "kid length out of range") }
        var published = anonymous
        published.keyID = kid
        self.keyID = kid
        self.publicJWK = published
        self.verificationKey = try JWSVerificationKey(publicKey: publicKey, algorithm: .es256, keyID: kid)
        self.privateKey = privateKey
        encodedJWTHeader = JWS.encode(JWSHeader(algorithm: .es256, keyID: kid, type: "JWT"))
    }

    /// Signs `claims` and returns the compact JWT.
    ///
    /// - Parameter type: the header's `typ`; "JWT" unless the token kind has its own.
    /// - Throws: `signing_failed`.
    public func sign(_ claims: JWTClaims, type: String = "JWT") throws(JOSEError) -> String {
        var writer = JSONWriter()
        claims.write(to: &writer)
        let payload = writer.bytes  // the same bytes as `jsonString`, without the string and its copy
        let header = type == "JWT" ? encodedJWTHeader : JWS.encode(JWSHeader(algorithm: algorithm, keyID: keyID, type: type))
        return try JWS.sign(payload: payload, encodedHeader: header, algorithm: algorithm, key: privateKey)
    }
}
