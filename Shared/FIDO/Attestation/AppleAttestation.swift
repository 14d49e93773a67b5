import Crypto

/// The `apple` anonymous attestation statement format (WebAuthn L3 §8.8): Apple issues a
/// per-credential certificate whose nonce extension binds it to this ceremony.
///
/// Syntax: `{ x5c: [ credCert: bytes, * (caCert: bytes) ] }`. There is no signature: the
/// certificate itself, chained to the Apple WebAuthn Root CA by the trust evaluator, is the
/// attestation. The result is ``AttestationType/anonCA`` with x5c as trust path.
public struct AppleAttestation: AttestationFormatVerifier {
    public let format = "apple"

    public init() {}

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // Step 1: attStmt is valid CBOR conforming to the syntax; extract its fields.
        let fields = try AttestationStatementFields(context.statement, allowed: ["x5c"], step: "§8.8 step 1")
        let x5c = try fields.certificateChain()
        let credCert = x5c[0]

        // Steps 2–3: nonce = SHA-256(authenticatorData ‖ clientDataHash).
        let nonce = SHA256.hash(context.signedData)
        // Step 4: nonce equals the value of extension 1.2.840.113635.100.8.2 in credCert.
        guard let certificateNonce = try Self.nonce(in: credCert) else {
            throw WebAuthnError(.certificateRequirements, step: "§8.8 step 4", "credCert has no Apple nonce extension")
        }
        guard ConstantTime.equals(certificateNonce, nonce) else {
            throw WebAuthnError(.nonceMismatch, step: "§8.8 step 4", "the Apple nonce is not SHA-256(authenticatorData ‖ clientDataHash)")
        }
        // Step 5: the credential public key equals the subject public key of credCert.
        let key = try AttestationChecks.publicKey(of: credCert, step: "§8.8 step 5")
        guard AttestationChecks.isCredentialKey(key, context) else {
            throw WebAuthnError(.publicKeyMismatch, step: "§8.8 step 5", "credCert's public key is not the credential public key")
        }
        // Step 6: Anonymization CA, trust path x5c.
        return AttestationResult(type: .anonCA, trustPath: x5c.map(\.derEncoded))
    }

    /// The nonce in extension 1.2.840.113635.100.8.2: `SEQUENCE { [1] EXPLICIT OCTET STRING }`;
    /// nil when the extension is absent.
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` when it is present but malformed
    ///   or critical (no relying party could process a critical private extension).
    static func nonce(in certificate: X509Certificate) throws(WebAuthnError) -> [UInt8]? {
        guard let ext = certificate.extensionValue(oid: X509OID.appleNonce) else { return nil }
        do {
            guard !ext.isCritical else { throw CryptoError("critical") }
            var outer = X509DERReader(ext.value)
            var sequence = try outer.readSequence()
            try outer.finish()
            var tagged = try sequence.readExplicit(1)
            try sequence.finish()
            let nonce = try tagged.readOctetString()
            try tagged.finish()
            guard nonce.count == 32 else { throw CryptoError("length") }
            return nonce
        } catch {
            throw WebAuthnError(.certificateRequirements, step: "§8.8 step 4", "the Apple nonce extension is malformed")
        }
    }
}
