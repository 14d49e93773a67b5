import Crypto

/// The members of an attestation statement (`attStmt`), read strictly: a CBOR map with text
/// keys drawn from the format's syntax, each of the type the syntax gives it. Unknown members
/// are refused, so a statement means exactly what its format defines (the CBOR decoder has
/// already refused duplicate keys).
///
/// Every refusal is ``WebAuthnError/Code/attestationInvalid`` at the format's step 1 ("verify
/// that attStmt is valid CBOR conforming to the syntax defined above"), except certificates
/// the X.509 parser refuses: ``AttestationFailure/certificateMalformed``.
struct AttestationStatementFields {
    /// More certificates than this in an x5c are refused before any is parsed (X509TrustStore
    /// takes at most 16 intermediates; real chains have 1–5 certificates).
    static let maximumChainLength = 8

    private let members: [String: CBORValue]
    private let step: String

    /// - Parameters:
    ///   - statement: `attStmt`.
    ///   - allowed: the member names of the format's syntax.
    ///   - step: e.g. `§8.4 step 1`, for errors.
    init(_ statement: CBORValue, allowed: Set<String>, step: String) throws(WebAuthnError) {
        guard let entries = statement.mapValue else { throw WebAuthnError(.attestationInvalid, step: step, "attStmt must be a map") }
        var members: [String: CBORValue] = [:]
        for entry in entries {
            guard let name = entry.key.textValue, allowed.contains(name) else {
                throw WebAuthnError(.attestationInvalid, step: step, "unexpected member in attStmt")
            }
            members[name] = entry.value
        }
        self.members = members
        self.step = step
    }

    private func invalid(_ detail: String) -> WebAuthnError { WebAuthnError(.attestationInvalid, step: step, detail) }

    /// An integer member (`alg`).
    func integer(_ name: String) throws(WebAuthnError) -> Int {
        guard let value = members[name] else { throw invalid("\(name) is required") }
        guard let int = value.intValue else { throw invalid("\(name) must be an integer") }
        return int
    }

    /// A byte-string member (`sig`, `certInfo`, `pubArea`, `response`).
    func bytes(_ name: String) throws(WebAuthnError) -> [UInt8] {
        guard let value = members[name] else { throw invalid("\(name) is required") }
        guard let bytes = value.bytesValue else { throw invalid("\(name) must be a byte string") }
        return bytes
    }

    /// A text member (`ver`).
    func text(_ name: String) throws(WebAuthnError) -> String {
        guard let value = members[name] else { throw invalid("\(name) is required") }
        guard let text = value.textValue else { throw invalid("\(name) must be a text string") }
        return text
    }

    /// Whether `name` is present.
    func contains(_ name: String) -> Bool { members[name] != nil }

    /// `x5c: [+ bytes]`, each entry parsed as a certificate, leaf first.
    ///
    /// - Throws: ``WebAuthnError`` — `attestation_invalid` for the wrong shape,
    ///   ``AttestationFailure/certificateMalformed`` for an entry the X.509 parser refuses
    ///   (the detail carries its reason, which names the rule and never the content).
    func certificateChain(_ name: String = "x5c") throws(WebAuthnError) -> [X509Certificate] {
        guard let value = members[name] else { throw invalid("\(name) is required") }
        guard let entries = value.arrayValue, !entries.isEmpty else { throw invalid("\(name) must be a non-empty array") }
        guard entries.count <= Self.maximumChainLength else { throw invalid("\(name) has more than \(Self.maximumChainLength) certificates") }
        var chain: [[UInt8]] = []
        for entry in entries {
            guard let der = entry.bytesValue else { throw invalid("\(name) entries must be byte strings") }
            chain.append(der)
        }
        return try Self.certificates(chain, step: step)
    }

    /// Parses DER certificates, leaf first.
    ///
    /// - Throws: ``AttestationFailure/certificateMalformed`` naming the index and the parser's rule.
    static func certificates(_ chain: [[UInt8]], step: String) throws(WebAuthnError) -> [X509Certificate] {
        var certificates: [X509Certificate] = []
        for (index, der) in chain.enumerated() {
            do {
                certificates.append(try X509Certificate(derEncoded: der))
            } catch {
                throw WebAuthnError(.certificateMalformed, step: step, "x5c[\(index)] is refused by the X.509 parser (\(error))")
            }
        }
        return certificates
    }
}

/// Checks shared by the formats whose statement is signed by a certificate key.
enum AttestationChecks {
    /// The certificate's subject public key.
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` when its type is not one Signet
    ///   verifies with (EC P-256/384/521, RSA, Ed25519).
    static func publicKey(of certificate: X509Certificate, step: String) throws(WebAuthnError) -> PublicKey {
        do {
            return try certificate.publicKey
        } catch {
            throw WebAuthnError(.certificateRequirements, step: step, "the attestation certificate's key type is not supported")
        }
    }

    /// Verifies an attestation signature made with `key` under the statement's `alg`.
    ///
    /// The algorithm comes from the statement, but only as a choice among those the key itself
    /// allows: an `alg` that does not fit the key is refused, never used to reinterpret it.
    ///
    /// RS1 (RSASSA-PKCS1-v1_5 with SHA-1) is registered for TPM attestation only, where
    /// TPM 1.2-era AIKs still use it; every other format refuses it (`allowsSHA1`).
    ///
    /// - Throws: ``WebAuthnError/Code/attestationAlgorithmMismatch`` when `alg` is unknown, is
    ///   RS1 where SHA-1 is not allowed, or does not fit `key`;
    ///   ``WebAuthnError/Code/attestationSignatureInvalid`` when the signature does not verify.
    ///   ECDSA signatures are DER, as WebAuthn carries them.
    static func verifySignature(
        _ signature: [UInt8], over message: [UInt8], with key: PublicKey, alg: Int, allowsSHA1: Bool = false, step: String
    ) throws(WebAuthnError) {
        // EdDSA (-8) names the curve by the key: Ed448 keys sign Ed448.
        let algorithm = COSEAlgorithm(alg) == .eddsa && key.kind == .ed448 ? .ed448 : COSEAlgorithm(alg).signatureAlgorithm
        guard let algorithm, allowsSHA1 || algorithm != .rs1, key.accepts(algorithm) else {
            throw WebAuthnError(.attestationAlgorithmMismatch, step: step, "alg is not an algorithm of the attestation key")
        }
        guard key.verify(signature: signature, message: message, algorithm: algorithm) else {
            throw WebAuthnError(.attestationSignatureInvalid, step: step, "the attestation signature does not verify")
        }
    }

    /// Whether `key` is the credential public key (compared as DER SubjectPublicKeyInfo, both
    /// re-encoded by OpenSSL so that equivalent encodings compare equal).
    static func isCredentialKey(_ key: PublicKey, _ context: AttestationContext) -> Bool {
        let credential = context.credentialPublicKey.publicKey.subjectPublicKeyInfo
        return !credential.isEmpty && credential == key.subjectPublicKeyInfo
    }

    /// id-fido-gen-ce-aaguid, if present, must be non-critical, well-formed and equal to the
    /// AAGUID in authenticator data (§8.2 step 2, §8.3 step 5).
    ///
    /// - Throws: ``AttestationFailure/certificateRequirements`` for a critical or malformed
    ///   extension, ``AttestationFailure/aaguidMismatch`` for another AAGUID.
    static func checkAAGUIDExtension(_ certificate: X509Certificate, _ context: AttestationContext, step: String) throws(WebAuthnError) {
        let aaguid: [UInt8]?
        do {
            aaguid = try certificate.fidoAAGUID()
        } catch {
            throw WebAuthnError(.certificateRequirements, step: step, "id-fido-gen-ce-aaguid is critical or malformed (\(error))")
        }
        if let aaguid, aaguid != context.attestedCredential.aaguid.bytes {
            throw WebAuthnError(.aaguidMismatch, step: step, "id-fido-gen-ce-aaguid is not the AAGUID in authenticator data")
        }
    }

    /// basicConstraints must not make the attestation certificate a CA. An absent extension
    /// means cA FALSE (RFC 5280 §4.2.1.9).
    static func checkNotCA(_ certificate: X509Certificate, step: String) throws(WebAuthnError) {
        if certificate.basicConstraints?.isCA == true {
            throw WebAuthnError(.certificateRequirements, step: step, "basicConstraints CA must be false")
        }
    }
}
