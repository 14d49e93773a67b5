import FoundationEssentials

/// A WebAuthn credential was registered: what the authentication service needs to verify
/// assertions with it. Carries the public key, never a secret.
///
/// The user is named by subject reference (``SubjectRefFormat``), never by username (#18): a
/// service that needs the username of a credential found without one (a discoverable sign-in)
/// asks the registration service (``SubjectUsername``).
public struct CredentialRegistered: EventPayload {
    public static let eventType = "signet.registration.credential.registered.v2"
    public static let topic = Topic.registration

    public var tenantId: String
    /// The user's subject reference (`s1.`…).
    public var subjectRef: String
    /// base64url user handle.
    public var userHandle: String
    /// base64url credential id.
    public var credentialId: String
    /// base64url COSE_Key.
    public var publicKeyCose: String
    public var algorithm: Int
    public var signCount: Int
    public var backupEligible: Bool
    public var backupState: Bool
    public var transports: [String]
    public var aaguid: String
    public var registeredAt: Date

    public init(
        tenantId: String, subjectRef: String, userHandle: String, credentialId: String, publicKeyCose: String, algorithm: Int, signCount: Int,
        backupEligible: Bool, backupState: Bool, transports: [String], aaguid: String, registeredAt: Date
    ) {
        self.tenantId = tenantId
        self.subjectRef = subjectRef
        self.userHandle = userHandle
        self.credentialId = credentialId
        self.publicKeyCose = publicKeyCose
        self.algorithm = algorithm
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.transports = transports
        self.aaguid = aaguid
        self.registeredAt = registeredAt
    }

    public static var fullExample: CredentialRegistered {
        CredentialRegistered(
            tenantId: "demo", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", userHandle: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw",
            publicKeyCose: "pQECAyYgASFYIEhW1CRfuNlIN6XTPKw0RbvzeaIlRMrDwwep-uq_-3WQIlgg1FZwd_RZRsqS_qgKCDvcVh7ScoKNo3w5h5fv3ihUSww",
            algorithm: -7, signCount: 0, backupEligible: true, backupState: true, transports: ["internal", "hybrid"],
            aaguid: "00000000-0000-0000-0000-000000000000", registeredAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: CredentialRegistered { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        guard isBase64URL(userHandle, maxBytes: 64) else { throw EventDecodingError.invalidData("userHandle") }
        guard isBase64URL(credentialId, maxBytes: 1023) else { throw EventDecodingError.invalidData("credentialId") }
        guard isBase64URL(publicKeyCose, maxBytes: 2048) else { throw EventDecodingError.invalidData("publicKeyCose") }
        guard signCount >= 0, signCount <= Int(UInt32.max) else { throw EventDecodingError.invalidData("signCount") }
        guard !backupState || backupEligible else { throw EventDecodingError.invalidData("backupState") }
        guard transports.count <= 8 else { throw EventDecodingError.invalidData("transports") }
        guard UUID(uuidString: aaguid) != nil else { throw EventDecodingError.invalidData("aaguid") }
    }
}

/// A credential's status changed: suspended, resumed, deleted, or flagged as a possible clone.
public struct CredentialStatusChanged: EventPayload {
    public static let eventType = "signet.registration.credential.status.changed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    /// base64url credential id.
    public var credentialId: String
    /// `active`, `suspended` or `deleted`.
    public var status: String
    public var changedAt: Date

    public init(tenantId: String, credentialId: String, status: String, changedAt: Date) {
        self.tenantId = tenantId
        self.credentialId = credentialId
        self.status = status
        self.changedAt = changedAt
    }

    public static let statuses = ["active", "suspended", "deleted"]

    public static var fullExample: CredentialStatusChanged {
        CredentialStatusChanged(tenantId: "demo", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", status: "suspended",
                                changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: CredentialStatusChanged { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard isBase64URL(credentialId, maxBytes: 1023) else { throw EventDecodingError.invalidData("credentialId") }
        guard CredentialStatusChanged.statuses.contains(status) else { throw EventDecodingError.invalidData("status") }
    }
}

/// A credential's friendly name changed (the name itself stays in the registration database).
public struct CredentialRenamed: EventPayload {
    public static let eventType = "signet.registration.credential.renamed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    /// base64url credential id.
    public var credentialId: String
    public var renamedAt: Date

    public init(tenantId: String, credentialId: String, renamedAt: Date) {
        self.tenantId = tenantId
        self.credentialId = credentialId
        self.renamedAt = renamedAt
    }

    public static var fullExample: CredentialRenamed {
        CredentialRenamed(tenantId: "demo", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", renamedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: CredentialRenamed { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard isBase64URL(credentialId, maxBytes: 1023) else { throw EventDecodingError.invalidData("credentialId") }
    }
}

/// A base64url string (no padding) of 1…maxBytes decoded bytes.
func isBase64URL(_ s: String, maxBytes: Int) -> Bool {
    let u = s.utf8
    guard !u.isEmpty, u.count <= (maxBytes * 4 + 2) / 3, u.count % 4 != 1 else { return false }
    return u.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
}

/// A tenant's FIDO policy changed (`PUT …/fido-policy`): what sign-in applies of it, so that
/// the authentication service asks for and checks the same user verification, algorithms and
/// models as registration does.
public struct FIDOPolicyChanged: EventPayload {
    public static let eventType = "signet.registration.fido.policy.changed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    /// `required`, `preferred` or `discouraged`: what sign-in asks for, and `required` refuses
    /// an assertion without the UV flag.
    public var userVerification: String
    /// COSE algorithm identifiers accepted (`-7`, `-8`, `-257`…); an assertion by a credential
    /// whose key has another algorithm is refused.
    public var allowedAlgorithms: [Int]
    /// Only these models (AAGUIDs, lower-case) may sign in; absent means any model.
    public var allowedAaguids: [String]?
    /// These models may not sign in.
    public var disallowedAaguids: [String]
    /// The tenant's legacy U2F AppID (an https URL): sign-in offers the `appid` extension.
    public var appId: String?
    /// The minimum FIDO certification level (`FIDO_CERTIFIED_L1` … `FIDO_CERTIFIED_L3plus`) of
    /// the models that may sign in; absent when the policy sets none.
    public var minimumCertificationLevel: String?
    /// With a minimum level: the models (lower-case AAGUIDs) whose FIDO metadata, when the event
    /// was written, certifies them at that level or above and reports them neither revoked nor
    /// compromised. A credential of any other model is refused at sign-in. The registration
    /// service publishes the policy again whenever newer metadata is loaded.
    public var certifiedAaguids: [String]?
    public var changedAt: Date

    public init(
        tenantId: String, userVerification: String, allowedAlgorithms: [Int], allowedAaguids: [String]?, disallowedAaguids: [String],
        appId: String? = nil, minimumCertificationLevel: String? = nil, certifiedAaguids: [String]? = nil, changedAt: Date
    ) {
        self.appId = appId
        self.minimumCertificationLevel = minimumCertificationLevel
        self.certifiedAaguids = certifiedAaguids
        self.tenantId = tenantId
        self.userVerification = userVerification
        self.allowedAlgorithms = allowedAlgorithms
        self.allowedAaguids = allowedAaguids
        self.disallowedAaguids = disallowedAaguids
        self.changedAt = changedAt
    }

    public static let userVerificationValues = ["required", "preferred", "discouraged"]

    public static var fullExample: FIDOPolicyChanged {
        FIDOPolicyChanged(
            tenantId: "demo", userVerification: "required", allowedAlgorithms: [-7, -8, -257],
            allowedAaguids: ["08987058-cadc-4b81-b6e1-30de50dcbe96"], disallowedAaguids: ["00000000-0000-0000-0000-000000000000"],
            appId: "https://login.example.com/u2f/appid.json", minimumCertificationLevel: "FIDO_CERTIFIED_L1",
            certifiedAaguids: ["08987058-cadc-4b81-b6e1-30de50dcbe96"], changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: FIDOPolicyChanged {
        var e = fullExample
        e.allowedAaguids = nil
        e.appId = nil
        e.minimumCertificationLevel = nil
        e.certifiedAaguids = nil
        return e
    }

    /// The FIDO certification levels, weakest first (MDS3 status names).
    public static let certificationLevels = [
        "FIDO_CERTIFIED_L1", "FIDO_CERTIFIED_L1plus", "FIDO_CERTIFIED_L2", "FIDO_CERTIFIED_L2plus", "FIDO_CERTIFIED_L3", "FIDO_CERTIFIED_L3plus",
    ]

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard Self.userVerificationValues.contains(userVerification) else { throw EventDecodingError.invalidData("userVerification") }
        guard !allowedAlgorithms.isEmpty, allowedAlgorithms.count <= 32 else { throw EventDecodingError.invalidData("allowedAlgorithms") }
        if let a = appId, !(a.hasPrefix("https://") && a.utf8.count <= 2048) { throw EventDecodingError.invalidData("appId") }
        for list in [allowedAaguids ?? [], disallowedAaguids] {
            guard list.count <= 1000, list.allSatisfy({ UUID(uuidString: $0) != nil && $0 == $0.lowercased() }) else {
                throw EventDecodingError.invalidData("aaguids")
            }
        }
        if let level = minimumCertificationLevel, !Self.certificationLevels.contains(level) {
            throw EventDecodingError.invalidData("minimumCertificationLevel")
        }
        // The certified models come with a minimum level, and only with one.
        guard (minimumCertificationLevel == nil) == (certifiedAaguids == nil) else { throw EventDecodingError.invalidData("certifiedAaguids") }
        if let certified = certifiedAaguids {
            guard certified.count <= 10_000, certified.allSatisfy({ UUID(uuidString: $0) != nil && $0 == $0.lowercased() }) else {
                throw EventDecodingError.invalidData("certifiedAaguids")
            }
        }
    }
}
