import FoundationEssentials

/// Attestation types (WebAuthn L3 §6.5.4).
public enum AttestationType: String, Sendable, Hashable, CaseIterable {
    /// No attestation (`none` format).
    case none
    /// Self attestation: signed with the credential private key itself.
    case `self`
    /// Basic attestation: an attestation key shared by a batch of authenticators.
    case basic
    /// Attestation CA: a per-credential attestation key certified by a CA (e.g. TPM).
    case attCA = "attca"
    /// Anonymization CA: a per-credential certificate that hides the authenticator (e.g. Apple).
    case anonCA = "anonca"
}

/// Everything an attestation statement format's verification procedure receives
/// (WebAuthn L3 §7.1 step 22: attStmt, authData and the client data hash).
public struct AttestationContext: Sendable {
    /// `fmt` from the attestation object.
    public let format: String
    /// `attStmt` from the attestation object (a CBOR map).
    public let statement: CBORValue
    /// The authenticator data the statement signs.
    public let authenticatorData: AuthenticatorData
    /// Its attested credential data (always present here).
    public let attestedCredential: AuthenticatorData.AttestedCredentialData
    /// The parsed credential public key.
    public let credentialPublicKey: COSEKey
    /// SHA-256 of clientDataJSON.
    public let clientDataHash: [UInt8]
    /// The time at which certificates must be valid (a parameter, never read from a clock here).
    public let verificationTime: Date

    public init(
        format: String, statement: CBORValue, authenticatorData: AuthenticatorData,
        attestedCredential: AuthenticatorData.AttestedCredentialData, credentialPublicKey: COSEKey,
        clientDataHash: [UInt8], verificationTime: Date
    ) {
        self.format = format
        self.statement = statement
        self.authenticatorData = authenticatorData
        self.attestedCredential = attestedCredential
        self.credentialPublicKey = credentialPublicKey
        self.clientDataHash = clientDataHash
        self.verificationTime = verificationTime
    }

    /// authenticatorData ‖ clientDataHash: what `packed`, `android-key`, `tpm` (via extraData)
    /// and self attestation sign.
    public var signedData: [UInt8] { authenticatorData.bytes + clientDataHash }
}

/// What a format's verification procedure established.
public struct AttestationResult: Sendable {
    /// The attestation type the statement conveys.
    public let type: AttestationType
    /// The attestation trust path, leaf first (DER X.509 certificates from `x5c`); empty for
    /// `none` and self attestation. Validating it against trust anchors is WebAuthn L3 §7.1
    /// steps 23–24, done by an ``AttestationTrustEvaluator`` after the format has verified.
    public let trustPath: [[UInt8]]

    public init(type: AttestationType, trustPath: [[UInt8]] = []) {
        self.type = type
        self.trustPath = trustPath
    }
}

/// The verification procedure of one attestation statement format (WebAuthn L3 §8), e.g.
/// ``NoneAttestation`` and ``PackedAttestation``.
///
/// One type per format, registered by its ``format`` identifier in an
/// ``AttestationFormatRegistry``. Formats that need X.509 (`packed` with `x5c`, `fido-u2f`,
/// `tpm`, `android-key`, `android-safetynet`, `apple`) implement this protocol in their own files
/// and return their trust path for an ``AttestationTrustEvaluator`` to validate.
public protocol AttestationFormatVerifier: Sendable {
    /// The attestation statement format identifier (`fmt`), matched case-sensitively.
    var format: String { get }

    /// Verifies `context.statement`.
    ///
    /// - Throws: ``WebAuthnError`` — ``WebAuthnError/Code/attestationInvalid`` for a statement
    ///   that does not have the format's syntax, ``WebAuthnError/Code/attestationAlgorithmMismatch``,
    ///   ``WebAuthnError/Code/attestationSignatureInvalid``, or
    ///   ``WebAuthnError/Code/unsupportedAttestationFormat`` for variants not implemented.
    func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult
}

/// WebAuthn L3 §7.1 steps 23–24: decides whether a verified attestation's trust path chains to
/// an acceptable trust anchor (tenant anchors, FIDO MDS3 statements) at the verification time.
///
/// Registration refuses any attestation with a non-empty trust path when no evaluator is
/// configured, so new formats fail closed until trust is wired in.
public protocol AttestationTrustEvaluator: Sendable {
    /// - Throws: ``WebAuthnError`` with ``WebAuthnError/Code/attestationNotTrusted``.
    func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError)
}
