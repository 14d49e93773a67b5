import FoundationEssentials

/// A device was created, updated (keys, push token, security), bound, unbound or revoked.
/// Carries no key and no push token. Rules and RPs see `securityEnabled` and the binding.
public struct DeviceChanged: EventPayload {
    public static let eventType = "signet.oob.device.changed.v2"
    public static let topic = Topic.oob

    public var tenantId: String
    public var deviceId: String
    /// `ACTIVE` or `REVOKED`.
    public var status: String
    /// The user it is bound to, if any.
    /// The user's opaque subject reference (``SubjectRefFormat``), never the username.
    public var subjectRef: String?
    public var platform: String
    public var securityEnabled: Bool
    /// The device's user-auth public key (a public JWK, EC P-256, as JSON text), when it has
    /// one: the transaction service verifies push-confirmed transactions with it
    /// (``SignedAssertionEvidence/oobPushFormat``). A public key, never a secret.
    public var userAuthKey: String?
    /// What happened: `created`, `updated`, `bound`, `unbound`, `push_token_updated`,
    /// `push_token_invalid`, `revoked`, `seen` (the device called again after a day or more
    /// without a call: rules judge inactivity by ``lastSeenAt``).
    public var change: String
    public var changedAt: Date
    /// The device's last call (a proof of possession), to the day: consumers judge inactivity
    /// by it (`SIGNET_OOB_INACTIVE_DAYS`). Absent in events of older producers.
    public var lastSeenAt: Date?

    public init(
        tenantId: String, deviceId: String, status: String, subjectRef: String?, platform: String, securityEnabled: Bool, userAuthKey: String? = nil,
        change: String, changedAt: Date, lastSeenAt: Date? = nil
    ) {
        self.tenantId = tenantId
        self.deviceId = deviceId
        self.status = status
        self.subjectRef = subjectRef
        self.platform = platform
        self.securityEnabled = securityEnabled
        self.userAuthKey = userAuthKey
        self.change = change
        self.changedAt = changedAt
        self.lastSeenAt = lastSeenAt
    }

    public static let changes = ["created", "updated", "bound", "unbound", "push_token_updated", "push_token_invalid", "revoked", "seen"]

    public static var fullExample: DeviceChanged {
        DeviceChanged(
            tenantId: "demo", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "ACTIVE", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", platform: "ios",
            securityEnabled: true,
            userAuthKey: #"{"crv":"P-256","kty":"EC","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#,
            change: "bound", changedAt: Date(timeIntervalSince1970: 1_764_000_000), lastSeenAt: Date(timeIntervalSince1970: 1_763_990_000))
    }
    public static var minimalExample: DeviceChanged {
        var e = fullExample
        e.subjectRef = nil
        e.userAuthKey = nil
        e.lastSeenAt = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard DeviceID.isValid(deviceId) else { throw EventDecodingError.invalidData("deviceId") }
        guard ["ACTIVE", "REVOKED"].contains(status) else { throw EventDecodingError.invalidData("status") }
        if let subjectRef, !SubjectRefFormat.isValid(subjectRef) { throw EventDecodingError.invalidData("subjectRef") }
        guard ["ios", "android"].contains(platform) else { throw EventDecodingError.invalidData("platform") }
        guard Self.changes.contains(change) else { throw EventDecodingError.invalidData("change") }
        if let userAuthKey, !(2...512).contains(userAuthKey.utf8.count) { throw EventDecodingError.invalidData("userAuthKey") }
    }
}

/// An approval was created or changed status (accepted, rejected, expired, cancelled, failed).
/// A wrong matching number shows as `REJECTED` with reason `number_mismatch`. Keeps the highest
/// `revision`. Carries the details hash, not the text.
public struct ApprovalChanged: EventPayload {
    public static let eventType = "signet.oob.approval.changed.v2"
    public static let topic = Topic.oob

    public var tenantId: String
    public var approvalId: String
    public var revision: Int
    public var status: String
    public var level: String
    /// The user's opaque subject reference (``SubjectRefFormat``), never the username.
    public var subjectRef: String
    /// The device asked, when the RP named one.
    public var deviceId: String?
    public var detailsHash: String
    public var numberMatching: Bool
    /// The device that decided and the level its signature proved.
    public var decidedDeviceId: String?
    public var decidedLevel: String?
    /// `user_rejected`, `number_mismatch`, `push_failed`.
    public var reason: String?
    public var expiresAt: Date
    public var changedAt: Date

    public init(
        tenantId: String, approvalId: String, revision: Int, status: String, level: String, subjectRef: String, deviceId: String?, detailsHash: String,
        numberMatching: Bool, decidedDeviceId: String?, decidedLevel: String?, reason: String?, expiresAt: Date, changedAt: Date
    ) {
        self.tenantId = tenantId
        self.approvalId = approvalId
        self.revision = revision
        self.status = status
        self.level = level
        self.subjectRef = subjectRef
        self.deviceId = deviceId
        self.detailsHash = detailsHash
        self.numberMatching = numberMatching
        self.decidedDeviceId = decidedDeviceId
        self.decidedLevel = decidedLevel
        self.reason = reason
        self.expiresAt = expiresAt
        self.changedAt = changedAt
    }

    /// `push_failed`: FAILED, no push reached any device (every token gone or every retry spent).
    public static let reasons = ["user_rejected", "number_mismatch", "push_failed"]

    public static var fullExample: ApprovalChanged {
        ApprovalChanged(
            tenantId: "demo", approvalId: "ap_0f1e2d3c4b5a69788796a5b4c3d2e1f0", revision: 2, status: "REJECTED", level: "ENTRY", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc",
            deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", numberMatching: true,
            decidedDeviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", decidedLevel: "ENTRY", reason: "number_mismatch",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120), changedAt: Date(timeIntervalSince1970: 1_764_000_030))
    }
    public static var minimalExample: ApprovalChanged {
        var e = fullExample
        e.deviceId = nil
        e.decidedDeviceId = nil
        e.decidedLevel = nil
        e.reason = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard ApprovalID.isValid(approvalId) else { throw EventDecodingError.invalidData("approvalId") }
        guard revision >= 1 else { throw EventDecodingError.invalidData("revision") }
        guard ApprovalStatus.all.contains(status) else { throw EventDecodingError.invalidData("status") }
        guard ApprovalLevel(rawValue: level) != nil else { throw EventDecodingError.invalidData("level") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        if let deviceId, !DeviceID.isValid(deviceId) { throw EventDecodingError.invalidData("deviceId") }
        if let decidedDeviceId, !DeviceID.isValid(decidedDeviceId) { throw EventDecodingError.invalidData("decidedDeviceId") }
        if let decidedLevel, ApprovalLevel(rawValue: decidedLevel) == nil { throw EventDecodingError.invalidData("decidedLevel") }
        if let reason, !Self.reasons.contains(reason) { throw EventDecodingError.invalidData("reason") }
        guard isBase64URL(detailsHash, maxBytes: 32) else { throw EventDecodingError.invalidData("detailsHash") }
    }
}
