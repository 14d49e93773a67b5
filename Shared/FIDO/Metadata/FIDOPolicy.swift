/// A tenant's rules for which authenticators may register (stored per tenant in the
/// registration database as JSON: see ``init(document:)`` and ``document()``).
///
/// ``evaluate(registration:metadata:residentKey:)`` applies it to a registration that
/// ``RegistrationVerifier`` has already verified; a refusal names the rule with a stable code
/// (``PolicyRefusal/Code``). The same policy also drives the ceremony itself: offer
/// ``allowedAlgorithms`` in `pubKeyCredParams`, ask for ``AttestationRule/conveyance``, and give
/// the verifier ``allowedAttestationTypes`` and ``requiresUserVerification``.
///
/// - Important: With `none` or self attestation the AAGUID is whatever the authenticator
///   claims. AAGUID lists are then advisory (they keep honest authenticators out, not
///   malicious ones); only with ``AttestationRule/required`` is the AAGUID proven by a
///   certificate chain. A minimum certification level is a security claim, so a policy that sets
///   one must require attestation (``validate()`` refuses it otherwise).
public struct FIDOPolicy: Sendable, Hashable {
    /// `required`, `preferred` or `discouraged`, as in WebAuthn's `userVerification` and
    /// `residentKey`.
    public enum Requirement: String, Sendable, Hashable, CaseIterable, Codable {
        case required, preferred, discouraged
    }

    /// WebAuthn's `AttestationConveyancePreference`.
    public enum AttestationConveyance: String, Sendable, Hashable, CaseIterable, Codable {
        case none, indirect, direct, enterprise
    }

    /// What attestation the tenant asks for and accepts.
    public struct AttestationRule: Sendable, Hashable {
        /// What creation options ask for.
        public var conveyance: AttestationConveyance
        /// Whether an attestation that chains to a trust anchor (basic, AttCA, AnonCA) is
        /// required. When true, `none` and self attestation are refused.
        public var required: Bool
        /// Whether `none` attestation is accepted (when not ``required``). An attestation whose
        /// trust path does not chain to a trust anchor counts as `none`
        /// (``RegistrationVerifier/UntrustedAttestation/treatAsNone``), so this decides it too.
        public var acceptNone: Bool
        /// Whether self attestation is accepted (when not ``required``).
        public var acceptSelf: Bool

        public init(conveyance: AttestationConveyance = .none, required: Bool = false, acceptNone: Bool = true, acceptSelf: Bool = true) {
            self.conveyance = conveyance
            self.required = required
            self.acceptNone = acceptNone
            self.acceptSelf = acceptSelf
        }
    }

    /// Only these models may register; nil means any model.
    public var allowedAAGUIDs: Set<AAGUID>?
    /// These models may never register.
    public var disallowedAAGUIDs: Set<AAGUID>
    /// Attestation conveyance and acceptance.
    public var attestation: AttestationRule
    /// The lowest FIDO certification level accepted (from MDS3 status reports); nil for none.
    public var minimumCertificationLevel: CertificationLevel?
    /// User verification: `required` refuses registrations without the UV flag.
    public var userVerification: Requirement
    /// Discoverable credentials: `required` refuses registrations the client does not report
    /// as discoverable (`credProps.rk`).
    public var residentKey: Requirement
    /// The credential algorithms accepted, in preference order (`pubKeyCredParams`).
    public var allowedAlgorithms: [COSEAlgorithm]
    /// The tenant's legacy FIDO U2F AppID (an `https` URL), for credentials registered with
    /// the U2F JavaScript API: sign-in then offers the `appid` extension (WebAuthn L3
    /// §10.1.1), and an assertion the client made with it carries the AppID's hash as its
    /// rpIdHash. `nil`: no U2F credentials.
    public var appId: String?
    /// Whether the client may create a passkey automatically (WebAuthn L3 conditional create,
    /// `mediation: "conditional"`) after a sign-in with a password or a one-time code: the
    /// registration options say so, and the credential created without a user gesture (no UP
    /// flag) is accepted. Default false.
    public var autoCreatePasskey: Bool

    public init(
        allowedAAGUIDs: Set<AAGUID>? = nil, disallowedAAGUIDs: Set<AAGUID> = [], attestation: AttestationRule = AttestationRule(),
        minimumCertificationLevel: CertificationLevel? = nil, userVerification: Requirement = .preferred,
        residentKey: Requirement = .preferred, allowedAlgorithms: [COSEAlgorithm] = COSEAlgorithm.defaultAllowed, appId: String? = nil,
        autoCreatePasskey: Bool = false
    ) {
        self.appId = appId
        self.autoCreatePasskey = autoCreatePasskey
        self.allowedAAGUIDs = allowedAAGUIDs
        self.disallowedAAGUIDs = disallowedAAGUIDs
        self.attestation = attestation
        self.minimumCertificationLevel = minimumCertificationLevel
        self.userVerification = userVerification
        self.residentKey = residentKey
        self.allowedAlgorithms = allowedAlgorithms
    }

    /// Consumer passkeys (the default, and the `demo` tenant's): no attestation asked for,
    /// `none` and self attestation accepted, user verification and discoverable credentials
    /// preferred, every verifiable algorithm but SHA-1 ones, no model restrictions.
    public static let consumerDefault = FIDOPolicy()

    // MARK: - What the ceremony needs

    /// The attestation types ``RegistrationVerifier/allowedAttestationTypes`` should accept.
    public var allowedAttestationTypes: Set<AttestationType> {
        var types: Set<AttestationType> = [.basic, .attCA, .anonCA]
        if !attestation.required {
            if attestation.acceptNone { types.insert(.none) }
            if attestation.acceptSelf { types.insert(.self) }
        }
        return types
    }

    /// ``RegistrationVerifier/requiresUserVerification``.
    public var requiresUserVerification: Bool { userVerification == .required }

    // MARK: - Validation

    /// Checks that the policy is coherent.
    ///
    /// - Throws: ``FIDOPolicyError`` with ``FIDOPolicyError/Code/invalid`` and the JSON Pointer
    ///   of the first member at fault.
    public func validate() throws(FIDOPolicyError) {
        if let violation = firstViolation() {
            throw FIDOPolicyError(.invalid, path: FIDOPolicyError.pointer(violation.path), violation.reason)
        }
    }

    /// The first incoherence: its path (member names and indices) and a fixed reason.
    func firstViolation() -> (path: [String], reason: String)? {
        if let allowed = allowedAAGUIDs {
            if allowed.isEmpty { return (["allowedAAGUIDs"], "an empty allow list refuses every authenticator; omit it to allow any") }
            // Indices are those of ``document()``, which writes AAGUIDs sorted.
            for (i, aaguid) in disallowedAAGUIDs.sorted(by: { $0.description < $1.description }).enumerated()
            where allowed.contains(aaguid) {
                return (["disallowedAAGUIDs", String(i)], "an AAGUID is both allowed and disallowed")
            }
        }
        if attestation.required {
            if attestation.conveyance == .none {
                return (["attestation", "conveyance"], "attestation is required, so conveyance must ask for it (indirect, direct or enterprise)")
            }
            if attestation.acceptNone { return (["attestation", "acceptNone"], "attestation is required, so none cannot be accepted") }
            if attestation.acceptSelf { return (["attestation", "acceptSelf"], "attestation is required, so self attestation cannot be accepted") }
        }
        if minimumCertificationLevel != nil, !attestation.required {
            return (["minimumCertificationLevel"], "a certification level can only be established with attestation.required")
        }
        if let appId {
            // U2F AppIDs are https URLs (FIDO AppID and Facet Specification §3.1.2).
            guard appId.utf8.count <= 2048, appId.hasPrefix("https://"), appId.utf8.count > 8,
                !appId.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
            else { return (["appId"], "appId must be an https URL of at most 2048 bytes") }
        }
        if allowedAlgorithms.isEmpty { return (["allowedAlgorithms"], "at least one algorithm is needed") }
        var seen = Set<COSEAlgorithm>()
        for (i, algorithm) in allowedAlgorithms.enumerated() {
            guard algorithm.signatureAlgorithm != nil, algorithm != .rs1 else {
                return (["allowedAlgorithms", String(i)], "not an algorithm Signet can verify for credentials")
            }
            guard seen.insert(algorithm).inserted else { return (["allowedAlgorithms", String(i)], "duplicate algorithm") }
        }
        return nil
    }
}
