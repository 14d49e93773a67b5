/// The outcome of ``FIDOPolicy/evaluate(registration:metadata:residentKey:)``.
public enum PolicyDecision: Sendable {
    /// The registration satisfies the policy. `metadata` is the authenticator's MDS3 entry
    /// when one was found (for its name and status in credential listings).
    case accepted(metadata: MetadataEntry?)
    /// The registration breaks a rule.
    case refused(PolicyRefusal)

    /// Whether the registration may proceed.
    public var isAccepted: Bool {
        if case .accepted = self { return true }
        return false
    }

    /// The refusal, if refused.
    public var refusal: PolicyRefusal? {
        if case .refused(let refusal) = self { return refusal }
        return nil
    }
}

/// Which rule of a ``FIDOPolicy`` refused a registration. Also an `Error`, so the registration
/// service can throw it to its HTTP edge (400, problem+json with ``code``).
///
/// - Important: ``description`` carries only the code and the rule; ``detail`` is a fixed
///   explanation. Neither carries credential IDs, keys or user data.
public struct PolicyRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code per rule.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            case aaguidNotAllowed = "policy_aaguid_not_allowed"
            case attestationRequired = "policy_attestation_required"
            case selfAttestationNotAllowed = "policy_self_attestation_not_allowed"
            case certificationLevel = "policy_certification_level"
            case authenticatorRevoked = "policy_authenticator_revoked"
            case algorithmNotAllowed = "policy_algorithm_not_allowed"
            case userVerificationRequired = "policy_user_verification_required"
            case residentKeyRequired = "policy_resident_key_required"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The AAGUID is disallowed, or not in the allow list.
        public static let aaguidNotAllowed = Code(.aaguidNotAllowed)
        /// `none` attestation where attestation is required (or `none` is not accepted).
        public static let attestationRequired = Code(.attestationRequired)
        /// Self attestation where it is not accepted.
        public static let selfAttestationNotAllowed = Code(.selfAttestationNotAllowed)
        /// The model's FIDO certification level is below the minimum, or unknown.
        public static let certificationLevel = Code(.certificationLevel)
        /// MDS3 reports the model revoked or compromised.
        public static let authenticatorRevoked = Code(.authenticatorRevoked)
        /// The credential's algorithm is not allowed.
        public static let algorithmNotAllowed = Code(.algorithmNotAllowed)
        /// User verification is required and the UV flag is not set.
        public static let userVerificationRequired = Code(.userVerificationRequired)
        /// A discoverable credential is required and the client did not report one.
        public static let residentKeyRequired = Code(.residentKeyRequired)

        /// Every code, for documentation and HTTP mapping tests.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// The stable string, e.g. `policy_attestation_required`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// Which check refused.
    public let code: Code
    /// The policy member that refused, as a JSON Pointer into the policy document (e.g.
    /// `/attestation/required`); `/metadata/status` for MDS3 revocation, which always applies.
    public let rule: String
    /// A fixed explanation for operators.
    public let detail: String

    public init(_ code: Code, rule: String, _ detail: String) {
        self.code = code
        self.rule = rule
        self.detail = detail
    }

    public var description: String { "PolicyRefusal(\(code), \(rule))" }
}
