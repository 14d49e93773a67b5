import FoundationEssentials

/// A QR session was created or changed status (scanned, approved (a blessing), succeeded, failed, expired). Keeps the
/// highest `revision`. Carries neither the payload nor the user: the device that claimed it
/// names them for those who hold the device's binding.
public struct QRSessionChanged: EventPayload {
    public static let eventType = "signet.oob.qr.session.changed.v1"
    public static let topic = Topic.oob

    public var tenantId: String
    public var qrSessionId: String
    public var revision: Int
    public var purpose: String
    public var status: String
    public var qrType: String
    /// The device that claimed it.
    public var deviceId: String?
    /// `user_rejected`; `credential_not_registered` (`register`: the credential the phone named
    /// is not the user's, not active, or older than the code).
    public var reason: String?
    public var expiresAt: Date
    public var changedAt: Date

    public init(
        tenantId: String, qrSessionId: String, revision: Int, purpose: String, status: String, qrType: String, deviceId: String?, reason: String?,
        expiresAt: Date, changedAt: Date
    ) {
        self.tenantId = tenantId
        self.qrSessionId = qrSessionId
        self.revision = revision
        self.purpose = purpose
        self.status = status
        self.qrType = qrType
        self.deviceId = deviceId
        self.reason = reason
        self.expiresAt = expiresAt
        self.changedAt = changedAt
    }

    public static let reasons = ["user_rejected", "credential_not_registered"]

    public static var fullExample: QRSessionChanged {
        QRSessionChanged(
            tenantId: "demo", qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", revision: 3, purpose: "authenticate", status: "FAILED",
            qrType: "universalLink", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", reason: "user_rejected",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120), changedAt: Date(timeIntervalSince1970: 1_764_000_030))
    }
    public static var minimalExample: QRSessionChanged {
        var e = fullExample
        e.deviceId = nil
        e.reason = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard QRSessionID.isValid(qrSessionId) else { throw EventDecodingError.invalidData("qrSessionId") }
        guard revision >= 1 else { throw EventDecodingError.invalidData("revision") }
        guard QRSessionPurpose.all.contains(purpose) else { throw EventDecodingError.invalidData("purpose") }
        guard QRSessionStatus.all.contains(status) else { throw EventDecodingError.invalidData("status") }
        guard QRPayloadType(rawValue: qrType) != nil else { throw EventDecodingError.invalidData("qrType") }
        if let deviceId, !DeviceID.isValid(deviceId) { throw EventDecodingError.invalidData("deviceId") }
        if let reason, !Self.reasons.contains(reason) { throw EventDecodingError.invalidData("reason") }
    }
}
