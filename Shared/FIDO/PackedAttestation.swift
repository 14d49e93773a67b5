import Crypto

/// The `packed` attestation statement format (WebAuthn L3 §8.2).
///
/// Syntax: `{ alg: int, sig: bytes, ? x5c: [+ bytes] }`.
///
/// - With `x5c` (§8.2 step 2): the signature is made by the attestation certificate's key under
///   `alg`, which must be an algorithm of that key; the certificate meets §8.2.1 (version 3;
///   subject C, O, OU = "Authenticator Attestation", CN; basicConstraints CA false); its
///   id-fido-gen-ce-aaguid extension, if present, is non-critical and equals the AAGUID in
///   authenticator data. The result is ``AttestationType/basic`` with x5c as trust path.
///   (Basic and AttCA cannot be told apart from the statement; metadata may refine it.)
/// - Without (§8.2 step 3): self attestation, signed with the credential key under its own
///   algorithm. The result is ``AttestationType/self`` with an empty trust path.
public struct PackedAttestation: AttestationFormatVerifier {
    public let format = "packed"

    public init() {}

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // §8.2 verification procedure, step 1: attStmt is valid CBOR conforming to the syntax
        // { alg: int, sig: bytes, ? x5c: [+ bytes] } and nothing else.
        let fields = try AttestationStatementFields(context.statement, allowed: ["alg", "sig", "x5c"], step: "§8.2 step 1")
        let alg = try fields.integer("alg")
        let sig = try fields.bytes("sig")

        if fields.contains("x5c") {
            let x5c = try fields.certificateChain()
            return try verifyBasic(context, alg: alg, sig: sig, x5c: x5c)
        }

        // §8.2 step 3 (self attestation): alg matches the credential public key's algorithm …
        guard alg == context.credentialPublicKey.algorithm.rawValue else {
            throw WebAuthnError(
                .attestationAlgorithmMismatch, step: "§8.2 step 3", "alg is not the credential public key's algorithm")
        }
        // … and sig verifies over authenticatorData ‖ clientDataHash with the credential key.
        guard context.credentialPublicKey.verify(signature: sig, message: context.signedData) else {
            throw WebAuthnError(.attestationSignatureInvalid, step: "§8.2 step 3", "self-attestation signature does not verify")
        }
        return AttestationResult(type: .self)
    }

    /// §8.2 step 2: x5c is present.
    private func verifyBasic(
        _ context: AttestationContext, alg: Int, sig: [UInt8], x5c: [X509Certificate]
    ) throws(WebAuthnError) -> AttestationResult {
        let step = "§8.2 step 2"
        let attestnCert = x5c[0]
        // Verify that sig is a valid signature over authenticatorData ‖ clientDataHash using the
        // attestation public key in attestnCert with the algorithm specified in alg.
        let key = try AttestationChecks.publicKey(of: attestnCert, step: step)
        try AttestationChecks.verifySignature(sig, over: context.signedData, with: key, alg: alg, step: step)
        // Verify that attestnCert meets the requirements in §8.2.1.
        try Self.checkCertificateRequirements(attestnCert)
        // If attestnCert contains id-fido-gen-ce-aaguid, verify that its value matches the
        // aaguid in authenticatorData (the requirement that it be non-critical is §8.2.1's).
        try AttestationChecks.checkAAGUIDExtension(attestnCert, context, step: step)
        // Optionally inspect x5c and external knowledge for Basic vs AttCA: left to metadata.
        // If successful, return Basic (or AttCA / uncertainty) and the trust path x5c.
        return AttestationResult(type: .basic, trustPath: x5c.map(\.derEncoded))
    }

    /// §8.2.1 Packed Attestation Statement Certificate Requirements.
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` naming the rule broken.
    static func checkCertificateRequirements(_ certificate: X509Certificate) throws(WebAuthnError) {
        let step = "§8.2.1"
        func fail(_ detail: String) -> WebAuthnError { WebAuthnError(.certificateRequirements, step: step, detail) }
        // Version MUST be set to 3.
        guard certificate.version == 3 else { throw fail("the attestation certificate must be X.509 version 3") }
        // Subject-C: the ISO 3166 code of the vendor's country (two letters) …
        let subject = certificate.subject
        let letters: ClosedRange<UInt8> = 0x41...0x5A
        guard let country = subject.country, country.utf8.count == 2, country.uppercased().utf8.allSatisfy(letters.contains) else {
            throw fail("subject C must be a two-letter country code")
        }
        // … Subject-O: the vendor's legal name …
        guard let organization = subject.organization, !organization.isEmpty else { throw fail("subject O is required") }
        // … Subject-OU: the literal "Authenticator Attestation" …
        guard subject.values(forOID: X509OID.organizationalUnitName) == ["Authenticator Attestation"] else {
            throw fail("subject OU must be \"Authenticator Attestation\"")
        }
        // … Subject-CN: of the vendor's choosing, but present.
        guard let commonName = subject.commonName, !commonName.isEmpty else { throw fail("subject CN is required") }
        // The Basic Constraints extension MUST have the CA component set to false.
        try AttestationChecks.checkNotCA(certificate, step: step)
        // id-fido-gen-ce-aaguid, when present, MUST NOT be critical (checked with its value).
    }
}
