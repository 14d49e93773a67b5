/// The status of an authenticator model in a status report (FIDO MDS 3.0 §3.1.4,
/// `AuthenticatorStatus`).
///
/// A struct over the string rather than an enum: a status added to the format after this code
/// was written still decodes (and is neither a certification nor a compromise).
public struct AuthenticatorStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The status as the BLOB writes it, e.g. `FIDO_CERTIFIED_L1`.
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Not FIDO certified.
    public static let notFIDOCertified = AuthenticatorStatus("NOT_FIDO_CERTIFIED")
    /// FIDO functional certification (phased out; treated as level 1).
    public static let fidoCertified = AuthenticatorStatus("FIDO_CERTIFIED")
    /// Malware can bypass user verification: the authenticator cannot be trusted to verify users.
    public static let userVerificationBypass = AuthenticatorStatus("USER_VERIFICATION_BYPASS")
    /// An attestation key of this model is compromised: its attestations prove nothing.
    public static let attestationKeyCompromise = AuthenticatorStatus("ATTESTATION_KEY_COMPROMISE")
    /// User keys can be extracted remotely.
    public static let userKeyRemoteCompromise = AuthenticatorStatus("USER_KEY_REMOTE_COMPROMISE")
    /// User keys can be extracted with physical access.
    public static let userKeyPhysicalCompromise = AuthenticatorStatus("USER_KEY_PHYSICAL_COMPROMISE")
    /// A firmware update is available.
    public static let updateAvailable = AuthenticatorStatus("UPDATE_AVAILABLE")
    /// The FIDO Alliance revoked the certification.
    public static let revoked = AuthenticatorStatus("REVOKED")
    /// The vendor submitted a self-assertion: not certified.
    public static let selfAssertionSubmitted = AuthenticatorStatus("SELF_ASSERTION_SUBMITTED")
    /// Certified at Authenticator Security Level 1.
    public static let fidoCertifiedL1 = AuthenticatorStatus("FIDO_CERTIFIED_L1")
    /// Level 1+.
    public static let fidoCertifiedL1Plus = AuthenticatorStatus("FIDO_CERTIFIED_L1plus")
    /// Level 2.
    public static let fidoCertifiedL2 = AuthenticatorStatus("FIDO_CERTIFIED_L2")
    /// Level 2+.
    public static let fidoCertifiedL2Plus = AuthenticatorStatus("FIDO_CERTIFIED_L2plus")
    /// Level 3.
    public static let fidoCertifiedL3 = AuthenticatorStatus("FIDO_CERTIFIED_L3")
    /// Level 3+.
    public static let fidoCertifiedL3Plus = AuthenticatorStatus("FIDO_CERTIFIED_L3plus")

    /// The statuses for which Signet refuses new registrations and flags existing ones.
    public static let revokedOrCompromised: Set<AuthenticatorStatus> = [
        .revoked, .userVerificationBypass, .attestationKeyCompromise, .userKeyRemoteCompromise,
        .userKeyPhysicalCompromise,
    ]

    /// Whether this status says the model must no longer be trusted.
    public var isRevokedOrCompromised: Bool { Self.revokedOrCompromised.contains(self) }

    /// The certification level this status grants; nil for any other status.
    public var certificationLevel: CertificationLevel? {
        if self == .fidoCertified { return .l1 }
        return CertificationLevel(rawValue: rawValue)
    }

    /// Whether this status ends any certification level granted before it (NOT_FIDO_CERTIFIED,
    /// SELF_ASSERTION_SUBMITTED, REVOKED). UPDATE_AVAILABLE and the compromise statuses leave
    /// the level as it was: compromises are judged on their own.
    var endsCertification: Bool { self == .notFIDOCertified || self == .selfAssertionSubmitted || self == .revoked }

    public var description: String { rawValue }
}
