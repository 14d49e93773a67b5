import Crypto

/// The `android-key` attestation statement format (WebAuthn L3 §8.4): the Android keystore's
/// own certificate for the credential key, carrying a KeyDescription extension.
///
/// Syntax: `{ alg: int, sig: bytes, x5c: [ credCert: bytes, * (caCert: bytes) ] }`.
///
/// Step 5 has a relying-party choice: with ``requiresTrustedEnvironment`` (the default) origin
/// and purpose are read from the TEE-enforced (hardware) list only, so keys that only software
/// vouches for are refused; without it, from the union of both lists.
public struct AndroidKeyAttestation: AttestationFormatVerifier {
    public let format = "android-key"

    /// Accept origin/purpose only from the TEE-enforced list. Default true.
    public var requiresTrustedEnvironment: Bool

    public init(requiresTrustedEnvironment: Bool = true) {
        self.requiresTrustedEnvironment = requiresTrustedEnvironment
    }

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // Step 1: attStmt is valid CBOR conforming to the syntax; extract its fields.
        let fields = try AttestationStatementFields(context.statement, allowed: ["alg", "sig", "x5c"], step: "§8.4 step 1")
        let alg = try fields.integer("alg")
        let sig = try fields.bytes("sig")
        let x5c = try fields.certificateChain()
        let credCert = x5c[0]

        // Step 2: sig is valid over authenticatorData ‖ clientDataHash with the public key of
        // the first certificate in x5c and the algorithm in alg.
        let key = try AttestationChecks.publicKey(of: credCert, step: "§8.4 step 2")
        try AttestationChecks.verifySignature(sig, over: context.signedData, with: key, alg: alg, step: "§8.4 step 2")
        // Step 3: that public key is the credential public key.
        guard AttestationChecks.isCredentialKey(key, context) else {
            throw WebAuthnError(.publicKeyMismatch, step: "§8.4 step 3", "the certificate's public key is not the credential public key")
        }
        // Step 4: attestationChallenge in the KeyDescription extension equals clientDataHash.
        let description = try Self.keyDescription(of: credCert)
        guard ConstantTime.equals(description.attestationChallenge, context.clientDataHash) else {
            throw WebAuthnError(.nonceMismatch, step: "§8.4 step 4", "attestationChallenge is not clientDataHash")
        }
        // Step 5: the authorization lists.
        try checkAuthorizations(description)
        // Step 6: Basic, trust path x5c.
        return AttestationResult(type: .basic, trustPath: x5c.map(\.derEncoded))
    }

    /// §8.4 step 5.
    private func checkAuthorizations(_ description: AndroidKeyDescription) throws(WebAuthnError) {
        let step = "§8.4 step 5"
        let software = description.softwareEnforced
        let tee = description.teeEnforced
        // allApplications is absent from both lists: the credential must be scoped to one RP.
        guard !software.allApplications, !tee.allApplications else {
            throw WebAuthnError(.keyAuthorizations, step: step, "allApplications is present: the key is not scoped to this application")
        }
        // origin == KM_ORIGIN_GENERATED and purpose includes KM_PURPOSE_SIGN, from the TEE list
        // alone or, if the policy allows software-only keys, from the union of both lists.
        let lists = requiresTrustedEnvironment ? [tee] : [tee, software]
        let origins = lists.compactMap(\.origin)
        guard !origins.isEmpty, origins.allSatisfy({ $0 == AndroidKeyDescription.originGenerated }) else {
            throw WebAuthnError(
                .keyAuthorizations, step: step,
                requiresTrustedEnvironment
                    ? "teeEnforced origin is not KM_ORIGIN_GENERATED" : "origin is not KM_ORIGIN_GENERATED in the authorization lists")
        }
        guard lists.contains(where: { $0.purposes?.contains(AndroidKeyDescription.purposeSign) == true }) else {
            throw WebAuthnError(
                .keyAuthorizations, step: step,
                requiresTrustedEnvironment ? "teeEnforced purpose lacks KM_PURPOSE_SIGN" : "purpose lacks KM_PURPOSE_SIGN in the authorization lists")
        }
    }

    /// The KeyDescription of `certificate`.
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` when the extension is absent,
    ///   critical or malformed.
    static func keyDescription(of certificate: X509Certificate) throws(WebAuthnError) -> AndroidKeyDescription {
        let step = "§8.4 step 4"
        guard let ext = certificate.extensionValue(oid: X509OID.androidKeyDescription) else {
            throw WebAuthnError(.certificateRequirements, step: step, "the certificate has no KeyDescription extension")
        }
        guard !ext.isCritical else {
            throw WebAuthnError(.certificateRequirements, step: step, "the KeyDescription extension must not be critical")
        }
        do {
            return try AndroidKeyDescription(extensionValue: ext.value)
        } catch {
            throw WebAuthnError(.certificateRequirements, step: step, "the KeyDescription extension is malformed (\(error))")
        }
    }
}
