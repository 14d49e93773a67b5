import Platform

/// A failed WebAuthn check: which one (``code``), at which step of the ceremony, and a detail for
/// operators.
///
/// - Important: ``description`` carries only the code and the step, so it can go into logs and
///   problem+json bodies. ``debugDescription`` adds a fixed explanation and, where relevant, the
///   code of an underlying CBOR/COSE error; neither ever includes challenges, keys, signatures,
///   user handles or other values taken from the request.
public struct WebAuthnError: CodedError {
    /// A stable name for each check that can fail. Compare with the static members; use
    /// ``rawValue`` on the wire.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            // Client data (§7.1 steps 5–10, §7.2 steps 8–13)
            case malformedClientData = "malformed_client_data"
            case clientDataTypeMismatch = "client_data_type_mismatch"
            case challengeMismatch = "challenge_mismatch"
            case originNotAllowed = "origin_not_allowed"
            case crossOriginNotAllowed = "cross_origin_not_allowed"
            case topOriginNotAllowed = "top_origin_not_allowed"
            case tokenBindingInvalid = "token_binding_invalid"
            // Credential and user (§7.2 steps 5–6)
            case credentialNotAllowed = "credential_not_allowed"
            case credentialIDMismatch = "credential_id_mismatch"
            case userHandleMissing = "user_handle_missing"
            case userHandleMismatch = "user_handle_mismatch"
            // Authenticator data
            case malformedAuthenticatorData = "malformed_authenticator_data"
            case rpIDHashMismatch = "rp_id_hash_mismatch"
            case userNotPresent = "user_not_present"
            case userVerificationRequired = "user_verification_required"
            case backupStateInconsistent = "backup_state_inconsistent"
            case backupEligibilityChanged = "backup_eligibility_changed"
            case attestedCredentialDataMissing = "attested_credential_data_missing"
            case credentialIDTooLong = "credential_id_too_long"
            // Keys and signatures
            case malformedCredentialPublicKey = "malformed_credential_public_key"
            case algorithmNotAllowed = "algorithm_not_allowed"
            case algorithmUnsupported = "algorithm_unsupported"
            case signatureInvalid = "signature_invalid"
            case signCountNotIncreased = "sign_count_not_increased"
            // Attestation (§7.1 steps 12, 21–24)
            case malformedAttestationObject = "malformed_attestation_object"
            case unsupportedAttestationFormat = "unsupported_attestation_format"
            case attestationInvalid = "attestation_invalid"
            case attestationAlgorithmMismatch = "attestation_algorithm_mismatch"
            case attestationSignatureInvalid = "attestation_signature_invalid"
            case attestationTypeNotAllowed = "attestation_type_not_allowed"
            case attestationNotTrusted = "attestation_not_trusted"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// clientDataJSON is not UTF-8 JSON of the expected shape, or is too large.
        public static let malformedClientData = Code(.malformedClientData)
        /// `type` is not `webauthn.create` / `webauthn.get` (or the configured types).
        public static let clientDataTypeMismatch = Code(.clientDataTypeMismatch)
        /// `challenge` is not the base64url encoding of the challenge issued.
        public static let challengeMismatch = Code(.challengeMismatch)
        /// `origin` is not one of the relying party's origins.
        public static let originNotAllowed = Code(.originNotAllowed)
        /// `crossOrigin` is true (or `topOrigin` present) but cross-origin use is not allowed.
        public static let crossOriginNotAllowed = Code(.crossOriginNotAllowed)
        /// `topOrigin` is not one of the allowed top-level origins.
        public static let topOriginNotAllowed = Code(.topOriginNotAllowed)
        /// `tokenBinding` has a status other than `supported` (Signet never negotiates Token Binding).
        public static let tokenBindingInvalid = Code(.tokenBindingInvalid)
        /// The credential is not in `allowCredentials`.
        public static let credentialNotAllowed = Code(.credentialNotAllowed)
        /// `rawId` is not the id of the credential record (or `id` is not `rawId` in base64url).
        public static let credentialIDMismatch = Code(.credentialIDMismatch)
        /// A discoverable-credential sign-in without `userHandle`.
        public static let userHandleMissing = Code(.userHandleMissing)
        /// `userHandle` is not the user handle of the account.
        public static let userHandleMismatch = Code(.userHandleMismatch)
        /// authenticatorData is truncated, has trailing bytes or bad embedded CBOR.
        public static let malformedAuthenticatorData = Code(.malformedAuthenticatorData)
        /// `rpIdHash` is not SHA-256 of an expected RP ID.
        public static let rpIDHashMismatch = Code(.rpIDHashMismatch)
        /// The UP flag is not set.
        public static let userNotPresent = Code(.userNotPresent)
        /// User verification is required and the UV flag is not set.
        public static let userVerificationRequired = Code(.userVerificationRequired)
        /// BS is set while BE is not (WebAuthn L3 §6.1.3).
        public static let backupStateInconsistent = Code(.backupStateInconsistent)
        /// BE differs from the value recorded at registration (it must never change).
        public static let backupEligibilityChanged = Code(.backupEligibilityChanged)
        /// A registration without the AT flag and attested credential data.
        public static let attestedCredentialDataMissing = Code(.attestedCredentialDataMissing)
        /// The credential ID is longer than 1023 bytes.
        public static let credentialIDTooLong = Code(.credentialIDTooLong)
        /// The credential public key is not an acceptable COSE_Key.
        public static let malformedCredentialPublicKey = Code(.malformedCredentialPublicKey)
        /// The credential's algorithm is not one the relying party allows.
        public static let algorithmNotAllowed = Code(.algorithmNotAllowed)
        /// The credential's algorithm is one Signet cannot verify (e.g. ML-DSA on OpenSSL 3.0).
        public static let algorithmUnsupported = Code(.algorithmUnsupported)
        /// The assertion signature does not verify with the credential public key.
        public static let signatureInvalid = Code(.signatureInvalid)
        /// The signature counter did not increase: a possible cloned authenticator.
        public static let signCountNotIncreased = Code(.signCountNotIncreased)
        /// attestationObject is not a CBOR map of `fmt`, `attStmt` and `authData`.
        public static let malformedAttestationObject = Code(.malformedAttestationObject)
        /// No verifier is registered for `fmt` (or the statement needs one not built yet).
        public static let unsupportedAttestationFormat = Code(.unsupportedAttestationFormat)
        /// The attestation statement does not have the format's syntax.
        public static let attestationInvalid = Code(.attestationInvalid)
        /// The statement's `alg` is not the credential key's algorithm.
        public static let attestationAlgorithmMismatch = Code(.attestationAlgorithmMismatch)
        /// The attestation signature does not verify.
        public static let attestationSignatureInvalid = Code(.attestationSignatureInvalid)
        /// The attestation type (none, self, basic…) is not accepted by the relying party's policy.
        public static let attestationTypeNotAllowed = Code(.attestationTypeNotAllowed)
        /// The attestation trust path does not chain to an acceptable trust anchor (or no
        /// ``AttestationTrustEvaluator`` is configured to decide).
        public static let attestationNotTrusted = Code(.attestationNotTrusted)

        /// Every code, for documentation and HTTP mapping tests.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// The stable string, e.g. `challenge_mismatch`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// Which check failed.
    public let code: Code
    /// The ceremony step, e.g. `§7.2 step 11`.
    public let step: String
    /// A fixed explanation for operators; never values from the request.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    public let line: Int

    public init(_ code: Code, step: String, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.step = step
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The code and the step (both fixed texts): safe for logs and problem bodies.
    public var description: String { "WebAuthnError(\(code), \(step))" }

    public var debugDescription: String { "WebAuthnError(\(code), \(step)): \(detail) [\(file):\(line)]" }
}
