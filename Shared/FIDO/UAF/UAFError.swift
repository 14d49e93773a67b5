import Platform

/// A failed FIDO UAF check: which one (``code``), the rule of the specification it applies, and
/// a detail for operators.
///
/// - Important: ``description`` carries only the code and the rule, so it can go into logs and
///   problem+json bodies. ``detail`` is a fixed explanation (tags, lengths, positions); it never
///   holds challenges, keys, key IDs, signatures, usernames or other values from the request.
public struct UAFError: CodedError {
    /// A stable name for each check that can fail. Compare with the static members; use
    /// ``rawValue`` on the wire (problem+json `code`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            // TLV (UAF Authenticator Commands §5, UAF Registry §3.1)
            case malformedTLV = "uaf_malformed_tlv"
            case unknownTag = "uaf_unknown_tag"
            case duplicateTag = "uaf_duplicate_tag"
            case missingTag = "uaf_missing_tag"
            case unknownCriticalExtension = "uaf_unknown_critical_extension"
            // Messages (UAF Protocol §3)
            case malformedMessage = "uaf_malformed_message"
            case unsupportedVersion = "uaf_unsupported_version"
            case operationMismatch = "uaf_operation_mismatch"
            case appIDMismatch = "uaf_app_id_mismatch"
            case malformedFinalChallengeParams = "uaf_malformed_final_challenge_params"
            case challengeMismatch = "uaf_challenge_mismatch"
            case facetNotTrusted = "uaf_facet_not_trusted"
            case channelBindingMismatch = "uaf_channel_binding_mismatch"
            case unsupportedAssertionScheme = "uaf_unsupported_assertion_scheme"
            // Assertions (UAF Protocol §3.4.6.5, §3.5.7.5)
            case finalChallengeHashMismatch = "uaf_final_challenge_hash_mismatch"
            case unsupportedAlgorithm = "uaf_unsupported_algorithm"
            case malformedPublicKey = "uaf_malformed_public_key"
            case unsupportedAttestation = "uaf_unsupported_attestation"
            case attestationNotTrusted = "uaf_attestation_not_trusted"
            case attestationSignatureInvalid = "uaf_attestation_signature_invalid"
            case surrogateNotAllowed = "uaf_surrogate_not_allowed"
            case aaidMismatch = "uaf_aaid_mismatch"
            case authenticatorRevoked = "uaf_authenticator_revoked"
            case unknownKeyID = "uaf_unknown_key_id"
            case authenticationModeMismatch = "uaf_authentication_mode_mismatch"
            case transactionContentHashMismatch = "uaf_transaction_content_hash_mismatch"
            case signatureInvalid = "uaf_signature_invalid"
            case signCounterNotIncreased = "uaf_sign_counter_not_increased"
            case duplicateAssertion = "uaf_duplicate_assertion"
            // Policy (UAF Protocol §3.4.6.5 step 4.a, §3.5.7.5)
            case policyNotAccepted = "policy_uaf_not_accepted"
            case policyDisallowed = "policy_uaf_disallowed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The bytes are not well-formed UAFV1TLV: a length past the end, trailing bytes, a
        /// tag of the wrong length or nesting beyond the bound.
        public static let malformedTLV = Code(.malformedTLV)
        /// A tag that has no place in the structure being read.
        public static let unknownTag = Code(.unknownTag)
        /// A tag that may appear once appears twice.
        public static let duplicateTag = Code(.duplicateTag)
        /// A mandatory tag is missing.
        public static let missingTag = Code(.missingTag)
        /// An extension marked critical (TAG_EXTENSION 0x3E11, `fail_if_unknown`) that Signet does not know.
        public static let unknownCriticalExtension = Code(.unknownCriticalExtension)
        /// The UAF message is not JSON of the protocol's shape, or too large.
        public static let malformedMessage = Code(.malformedMessage)
        /// `header.upv` is not a version offered (1.1 or 1.2 for responses to our requests).
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// `header.op` is not the operation expected.
        public static let operationMismatch = Code(.operationMismatch)
        /// `header.appID` or FinalChallengeParams' `appID` is not the tenant's AppID.
        public static let appIDMismatch = Code(.appIDMismatch)
        /// `fcParams` is not base64url of FinalChallengeParams JSON.
        public static let malformedFinalChallengeParams = Code(.malformedFinalChallengeParams)
        /// FinalChallengeParams' `challenge` is not the challenge issued.
        public static let challengeMismatch = Code(.challengeMismatch)
        /// FinalChallengeParams' `facetID` is not one of the tenant's trusted facets.
        public static let facetNotTrusted = Code(.facetNotTrusted)
        /// `channelBinding` names a TLS binding that does not match the connection's.
        public static let channelBindingMismatch = Code(.channelBindingMismatch)
        /// `assertionScheme` is not `UAFV1TLV`.
        public static let unsupportedAssertionScheme = Code(.unsupportedAssertionScheme)
        /// The assertion's FinalChallengeHash is not the hash of `fcParams`.
        public static let finalChallengeHashMismatch = Code(.finalChallengeHashMismatch)
        /// A signature algorithm or key encoding Signet cannot verify (or that does not fit the key).
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// The public key does not parse in its declared encoding.
        public static let malformedPublicKey = Code(.malformedPublicKey)
        /// An attestation type other than basic full or basic surrogate (ECDAA, AttCA).
        public static let unsupportedAttestation = Code(.unsupportedAttestation)
        /// The attestation certificate does not chain to the metadata's roots, or the AAID has no metadata.
        public static let attestationNotTrusted = Code(.attestationNotTrusted)
        /// The KRD signature does not verify with the attestation key.
        public static let attestationSignatureInvalid = Code(.attestationSignatureInvalid)
        /// Basic surrogate attestation for an authenticator whose metadata does not list it,
        /// or without metadata when self attestation is not allowed.
        public static let surrogateNotAllowed = Code(.surrogateNotAllowed)
        /// The AAID is not that of the registration the key ID belongs to.
        public static let aaidMismatch = Code(.aaidMismatch)
        /// The metadata says the authenticator model is revoked or compromised.
        public static let authenticatorRevoked = Code(.authenticatorRevoked)
        /// The (AAID, KeyID) is not a registration of the user.
        public static let unknownKeyID = Code(.unknownKeyID)
        /// authenticationMode is not 0x01 (no transaction) or 0x02 (transaction shown).
        public static let authenticationModeMismatch = Code(.authenticationModeMismatch)
        /// TransactionContentHash is not the hash of the transaction content sent.
        public static let transactionContentHashMismatch = Code(.transactionContentHashMismatch)
        /// The assertion signature does not verify with the registered key.
        public static let signatureInvalid = Code(.signatureInvalid)
        /// The signature counter is non-zero and did not increase: a possible clone.
        public static let signCounterNotIncreased = Code(.signCounterNotIncreased)
        /// Two assertions of one response for the same authenticator key.
        public static let duplicateAssertion = Code(.duplicateAssertion)
        /// The authenticator matches none of the policy's accepted criteria.
        public static let policyNotAccepted = Code(.policyNotAccepted)
        /// The authenticator matches one of the policy's disallowed criteria.
        public static let policyDisallowed = Code(.policyDisallowed)

        /// Every code, for documentation and HTTP mapping tests.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// The stable string, e.g. `uaf_challenge_mismatch`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// Which check failed.
    public let code: Code
    /// The rule applied, e.g. `Protocol §3.4.6.5 step 4.c`.
    public let rule: String
    /// A fixed explanation for operators; never values from the request.
    public let detail: String
    public let file: String
    public let line: Int

    public init(_ code: Code, rule: String, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.rule = rule
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The code and the rule (both fixed texts): safe for logs and problem bodies.
    public var description: String { "UAFError(\(code), \(rule))" }
    public var debugDescription: String { "UAFError(\(code), \(rule)): \(detail) [\(file):\(line)]" }
}
