import Crypto

/// The `tpm` attestation statement format (WebAuthn L3 §8.3): a TPM 2.0 certifies the
/// credential key with an attestation identity key (AIK) whose certificate a CA issued.
///
/// Syntax: `{ ver: "2.0", alg: int, x5c: [ aikCert: bytes, * (caCert: bytes) ], sig: bytes,
/// certInfo: bytes, pubArea: bytes }` (L3 removed ECDAA, so `x5c` is required).
///
/// TPM manufacturers in the AIK certificate must be registered TCG vendors
/// (``TPMManufacturer``). The FIDO conformance tools (`FFFFF1D0`) and the W3C §16 test vectors
/// (`00000000`) use identifiers no real TPM has; they pass only with
/// ``acceptsTestManufacturers`` set, which a conformance or test deployment does by building
/// its registry with ``AttestationFormatRegistry/standard(_:)`` and
/// ``AttestationFormatOptions/acceptsTestTPMManufacturers``. Production never sets it.
public struct TPMAttestation: AttestationFormatVerifier {
    public let format = "tpm"

    /// Accept the test-tool manufacturer identifiers. Default false.
    public var acceptsTestManufacturers: Bool

    public init(acceptsTestManufacturers: Bool = false) {
        self.acceptsTestManufacturers = acceptsTestManufacturers
    }

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // Step 1: attStmt is valid CBOR conforming to the syntax; extract its fields.
        let step1 = "§8.3 step 1"
        let fields = try AttestationStatementFields(
            context.statement, allowed: ["ver", "alg", "x5c", "sig", "certInfo", "pubArea"], step: step1)
        guard try fields.text("ver") == "2.0" else { throw WebAuthnError(.attestationInvalid, step: step1, "ver must be \"2.0\"") }
        let alg = try fields.integer("alg")
        let sig = try fields.bytes("sig")
        let certInfoBytes = try fields.bytes("certInfo")
        let pubAreaBytes = try fields.bytes("pubArea")
        let x5c = try fields.certificateChain()

        // Step 2: the public key in pubArea's parameters and unique fields is the credential
        // public key.
        let pubArea: TPMStructures.PublicArea
        do {
            pubArea = try TPMStructures.PublicArea(pubAreaBytes)
        } catch {
            throw WebAuthnError(.tpmStructure, step: "§8.3 step 2", "pubArea is not a TPMT_PUBLIC (\(error.reason))")
        }
        try Self.checkPublicArea(pubArea, matches: context)

        // Step 3: attToBeSigned = authenticatorData ‖ clientDataHash.
        let attToBeSigned = context.signedData

        // Step 4: certInfo is a valid TPMS_ATTEST …
        let step4 = "§8.3 step 4"
        let certInfo: TPMStructures.CertifyInfo
        do {
            certInfo = try TPMStructures.CertifyInfo(certInfoBytes)
        } catch {
            throw WebAuthnError(.tpmStructure, step: step4, "certInfo is not a TPMS_ATTEST of type CERTIFY (\(error.reason))")
        }
        // … magic is TPM_GENERATED_VALUE …
        guard certInfo.magic == TPMStructures.generatedValue else {
            throw WebAuthnError(.tpmStructure, step: step4, "certInfo.magic is not TPM_GENERATED_VALUE")
        }
        // … type is TPM_ST_ATTEST_CERTIFY (already required to parse the body) …
        guard certInfo.type == TPMStructures.attestCertify else {
            throw WebAuthnError(.tpmStructure, step: step4, "certInfo.type is not TPM_ST_ATTEST_CERTIFY")
        }
        // … extraData is the hash of attToBeSigned with the hash algorithm of alg …
        guard let extraDataHash = AttestationDigest(COSEAlgorithm(alg)) else {
            throw WebAuthnError(.attestationAlgorithmMismatch, step: step4, "alg is not an algorithm Signet verifies")
        }
        guard ConstantTime.equals(certInfo.extraData, extraDataHash.hash(attToBeSigned)) else {
            throw WebAuthnError(.nonceMismatch, step: step4, "certInfo.extraData is not the hash of authenticatorData ‖ clientDataHash")
        }
        // … and attested.name is a valid Name for pubArea: nameAlg ‖ H_nameAlg(pubArea)
        // (TPM 2.0 Part 1 §16). qualifiedSigner, clockInfo and firmwareVersion are ignored.
        guard let nameHash = AttestationDigest(tpmAlgorithm: pubArea.nameAlg) else {
            throw WebAuthnError(.tpmStructure, step: step4, "pubArea.nameAlg is not SHA-1/256/384/512")
        }
        let name = [UInt8(pubArea.nameAlg >> 8), UInt8(pubArea.nameAlg & 0xFF)] + nameHash.hash(pubAreaBytes)
        guard certInfo.attestedName == name else {
            throw WebAuthnError(.tpmStructure, step: step4, "certInfo.attested.name is not the Name of pubArea")
        }

        // Step 5 (x5c present): sig is a valid signature over certInfo with aikCert's key and
        // alg …
        let step5 = "§8.3 step 5"
        let aikCert = x5c[0]
        let key = try AttestationChecks.publicKey(of: aikCert, step: step5)
        try AttestationChecks.verifySignature(sig, over: certInfoBytes, with: key, alg: alg, allowsSHA1: true, step: step5)
        // … aikCert meets §8.3.1 …
        try checkCertificateRequirements(aikCert)
        // … id-fido-gen-ce-aaguid, if present, matches the AAGUID in authenticator data …
        try AttestationChecks.checkAAGUIDExtension(aikCert, context, step: step5)
        // … then AttCA, trust path x5c.
        return AttestationResult(type: .attCA, trustPath: x5c.map(\.derEncoded))
    }

    /// §8.3 step 2: pubArea's key is the credential public key (compared as integers, so
    /// leading zero octets do not matter).
    static func checkPublicArea(_ pubArea: TPMStructures.PublicArea, matches context: AttestationContext) throws(WebAuthnError) {
        let step = "§8.3 step 2"
        let cose = context.attestedCredential.credentialPublicKey
        func integer(_ label: Int) -> [UInt8]? { cose[intKey: label]?.bytesValue.map { Array($0.drop { $0 == 0 }) } }
        let matches: Bool
        switch (pubArea.key, context.credentialPublicKey.keyType) {
        case (.rsa(let modulus, let exponent), .rsa):
            // An exponent of zero in TPMS_RSA_PARMS means the default, 2^16 + 1.
            let e = exponent == 0 ? 65537 : exponent
            var exponentBytes = [UInt8(e >> 24), UInt8(e >> 16 & 0xFF), UInt8(e >> 8 & 0xFF), UInt8(e & 0xFF)]
            exponentBytes = Array(exponentBytes.drop { $0 == 0 })
            matches = integer(-1) == Array(modulus.drop { $0 == 0 }) && integer(-2) == exponentBytes
        case (.ecc(let curve, let x, let y), .ec2):
            // TPM_ECC_NIST_P256/P384/P521 (0x0003/4/5) are COSE curves 1/2/3.
            let coseCurve: Int? = [0x0003: 1, 0x0004: 2, 0x0005: 3][curve]
            matches = coseCurve != nil && coseCurve == context.credentialPublicKey.curve
                && integer(-2) == Array(x.drop { $0 == 0 }) && integer(-3) == Array(y.drop { $0 == 0 })
        default:
            matches = false
        }
        guard matches else {
            throw WebAuthnError(.publicKeyMismatch, step: step, "pubArea does not hold the credential public key")
        }
    }

    /// §8.3.1 TPM Attestation Statement Certificate Requirements.
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` naming the rule broken, or
    ///   ``AttestationFailure/tpmManufacturer`` for a manufacturer outside the TCG registry.
    func checkCertificateRequirements(_ certificate: X509Certificate) throws(WebAuthnError) {
        let step = "§8.3.1"
        func fail(_ detail: String) -> WebAuthnError { WebAuthnError(.certificateRequirements, step: step, detail) }
        // Version MUST be set to 3.
        guard certificate.version == 3 else { throw fail("the AIK certificate must be X.509 version 3") }
        // Subject field MUST be set to empty.
        guard certificate.subject.isEmpty else { throw fail("the AIK certificate subject must be empty") }
        // The Subject Alternative Name extension MUST be set as defined in the TCG EK
        // Credential Profile §3.2.9: a directoryName with manufacturer, model and version.
        let attributes = (certificate.subjectAlternativeNames ?? []).flatMap { name -> [X509Name.Attribute] in
            if case .directoryName(let directory) = name { return directory.attributes }
            return []
        }
        func values(_ oid: String) -> [String] { attributes.filter { $0.oid == oid }.map(\.value) }
        let manufacturers = values(X509OID.tpmManufacturer)
        guard manufacturers.count == 1, values(X509OID.tpmModel).count == 1, values(X509OID.tpmVersion).count == 1 else {
            throw fail("subjectAltName must hold one TPM manufacturer, model and version")
        }
        guard let manufacturer = TPMManufacturer(attributeValue: manufacturers[0]) else {
            throw WebAuthnError(.tpmManufacturer, step: step, "the TPM manufacturer is not of the form id:XXXXXXXX")
        }
        guard manufacturer.isRegistered || (acceptsTestManufacturers && manufacturer.isTestIdentifier) else {
            throw WebAuthnError(.tpmManufacturer, step: step, "the TPM manufacturer is not a registered TCG vendor")
        }
        // The Extended Key Usage extension MUST contain tcg-kp-AIKCertificate.
        guard certificate.extendedKeyUsage?.contains(X509OID.tcgKpAIKCertificate) == true else {
            throw fail("extendedKeyUsage must contain tcg-kp-AIKCertificate (2.23.133.8.3)")
        }
        // The Basic Constraints extension MUST have the CA component set to false.
        try AttestationChecks.checkNotCA(certificate, step: step)
    }
}
