/// Why an attestation statement was refused, one level finer than ``WebAuthnError/Code``.
///
/// Each failure is reported under a ``WebAuthnError/Code`` (``code``) and carries its own
/// stable name (``rawValue``, e.g. `attestation_aaguid_mismatch`) at the start of
/// ``WebAuthnError/detail``, where ``WebAuthnError/attestationFailure`` reads it back. Callers
/// that map errors to problem+json can publish the finer name; callers that only look at the
/// code keep working.
///
/// - Note: These would be first-class ``WebAuthnError/Code`` members if that type could be
///   extended outside its file (its cases are a private enum). Until they are promoted there,
///   this is the one place that names them.
public struct AttestationFailure: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, CaseIterable {
        case certificateMalformed = "attestation_certificate_malformed"
        case certificateRequirements = "attestation_certificate_requirements"
        case aaguidMismatch = "attestation_aaguid_mismatch"
        case aaguidNotZero = "attestation_aaguid_not_zero"
        case publicKeyMismatch = "attestation_public_key_mismatch"
        case nonceMismatch = "attestation_nonce_mismatch"
        case keyAuthorizations = "attestation_key_authorizations"
        case integrityVerdict = "attestation_integrity_verdict"
        case timestampOutOfWindow = "attestation_timestamp_out_of_window"
        case tpmStructure = "attestation_tpm_structure"
        case tpmManufacturer = "attestation_tpm_manufacturer"
        case noTrustAnchors = "attestation_no_trust_anchors"
        case chainRejected = "attestation_chain_rejected"
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// An x5c entry (or a SafetyNet JWS `x5c` entry) is not a certificate the strict X.509
    /// parser accepts (the detail names the rule, e.g. a malformed extension).
    public static let certificateMalformed = AttestationFailure(.certificateMalformed)
    /// The attestation certificate breaks its format's certificate requirements (§8.2.1 packed,
    /// §8.3.1 tpm, the SafetyNet hostname, …).
    public static let certificateRequirements = AttestationFailure(.certificateRequirements)
    /// The certificate's id-fido-gen-ce-aaguid extension names another AAGUID than authData
    /// (§8.2 step 2, §8.3 step 5).
    public static let aaguidMismatch = AttestationFailure(.aaguidMismatch)
    /// A `fido-u2f` attestation whose authData AAGUID is not zero (U2F authenticators have none;
    /// the U2F signature does not cover it).
    public static let aaguidNotZero = AttestationFailure(.aaguidNotZero)
    /// The attested key (certificate or TPM pubArea) is not the credential public key.
    public static let publicKeyMismatch = AttestationFailure(.publicKeyMismatch)
    /// The value binding the statement to this ceremony (Apple nonce, SafetyNet nonce, Android
    /// attestationChallenge, TPM extraData) is not the expected hash.
    public static let nonceMismatch = AttestationFailure(.nonceMismatch)
    /// Android KeyDescription authorization lists do not show a generated signing key scoped to
    /// this RP (§8.4 step 5).
    public static let keyAuthorizations = AttestationFailure(.keyAuthorizations)
    /// SafetyNet reports a device that fails its integrity checks (`ctsProfileMatch` /
    /// `basicIntegrity` false).
    public static let integrityVerdict = AttestationFailure(.integrityVerdict)
    /// SafetyNet `timestampMs` is outside the accepted window around the verification time.
    public static let timestampOutOfWindow = AttestationFailure(.timestampOutOfWindow)
    /// TPM `certInfo` / `pubArea` are malformed or inconsistent (magic, type, name, sizes).
    public static let tpmStructure = AttestationFailure(.tpmStructure)
    /// The AIK certificate names a TPM manufacturer that is not in the TCG vendor registry.
    public static let tpmManufacturer = AttestationFailure(.tpmManufacturer)
    /// No trust anchor is configured for this format / authenticator.
    public static let noTrustAnchors = AttestationFailure(.noTrustAnchors)
    /// OpenSSL path validation refused the trust path (the detail has its reason and depth).
    public static let chainRejected = AttestationFailure(.chainRejected)

    /// Every failure, for documentation and HTTP mapping tests.
    public static var allCases: [AttestationFailure] { Base.allCases.map(AttestationFailure.init) }

    /// The stable name, e.g. `attestation_aaguid_mismatch`.
    public var rawValue: String { base.rawValue }
    public var description: String { base.rawValue }

    /// The ``WebAuthnError/Code`` this failure is reported under.
    public var code: WebAuthnError.Code {
        switch base {
        case .noTrustAnchors, .chainRejected: .attestationNotTrusted
        default: .attestationInvalid
        }
    }

    /// The failure named at the start of `detail`, if any.
    init?(detail: String) {
        guard let colon = detail.firstIndex(of: ":"), let base = Base(rawValue: String(detail[..<colon])) else { return nil }
        self.base = base
    }
}

extension WebAuthnError {
    /// A refused attestation: ``AttestationFailure/code``, with the failure's name leading the
    /// detail.
    init(_ failure: AttestationFailure, step: String, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.init(failure.code, step: step, "\(failure.rawValue): \(detail)", file: file, line: line)
    }

    /// The finer reason of an attestation refusal, when there is one (see ``AttestationFailure``).
    public var attestationFailure: AttestationFailure? { AttestationFailure(detail: detail) }
}
