import FoundationEssentials

/// The two ways of device blessing (#17): `registerQr`, the old (bound) device shows the code
/// and the new one scans it; `authenticateQr`, the new device shows it and the old one scans.
/// Either way the old device's user approves (signed with its user-auth key) before the new
/// device registers for the same user and is bound to them.
public enum QRBlessMode {
    public static let registerQr = "registerQr"
    public static let authenticateQr = "authenticateQr"
    public static let all = [registerQr, authenticateQr]
}

/// A device asks for a blessing code (`POST /v1/tenants/{tenant}/devices/{deviceId}/bless-sessions`,
/// `Device-Proof`).
public struct QRBlessCreateRequest: Codable, Sendable, Equatable {
    /// ``QRBlessMode``: `registerQr` from the old device, `authenticateQr` from the new one.
    public var mode: String
    /// `deepLink`, `universalLink` or `compact` (default as for QR sessions).
    public var qrType: String?
    /// 30-600 (default 120).
    public var expiresInSeconds: Int?

    public init(mode: String, qrType: String? = nil, expiresInSeconds: Int? = nil) {
        self.mode = mode
        self.qrType = qrType
        self.expiresInSeconds = expiresInSeconds
    }

    public static var fullExample: QRBlessCreateRequest { QRBlessCreateRequest(mode: "registerQr", qrType: "deepLink", expiresInSeconds: 120) }
}

/// The old device's answer to a blessing (`POST …/devices/{deviceId}/qr-sessions/{id}/approval`):
/// an ES256 signature (raw r‖s, base64url) by its user-auth key over
/// ``QRBlessSignature/message(qrSessionId:newDeviceId:decision:)``, as ESSENTIAL approvals are signed.
public struct QRBlessApprovalRequest: Codable, Sendable, Equatable {
    /// `ACCEPT` or `REJECT`.
    public var decision: String
    public var signature: String

    public init(decision: String, signature: String) {
        self.decision = decision
        self.signature = signature
    }

    public static var fullExample: QRBlessApprovalRequest {
        QRBlessApprovalRequest(decision: "ACCEPT", signature: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1Uq2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U")
    }
}

/// What the old device signs: the session and the new device it lets in, so that a signature
/// for one new device never lets another in.
public enum QRBlessSignature {
    public static func message(qrSessionId: String, newDeviceId: String, decision: String) -> [UInt8] {
        Array("signet-bless-v1\n\(qrSessionId)\n\(newDeviceId)\n\(decision)".utf8)
    }
}

/// A blessing session as its two devices read it (`GET …/devices/{deviceId}/qr-sessions/{id}`,
/// `Device-Proof`, `waitSeconds`/`sinceRevision` for a long poll).
public struct QRBlessView: Codable, Sendable, Equatable {
    public var qrSessionId: String
    /// ``QRBlessMode``.
    public var mode: String
    /// ``QRSessionStatus``: `PENDING`, `SCANNED` (both devices known), `APPROVED`, `SUCCEEDED`,
    /// `FAILED`, `EXPIRED`.
    public var status: String
    public var revision: Int
    /// Why it failed: `user_rejected` (the old device refused, or the new one gave up),
    /// `credential_not_registered`.
    public var reason: String?
    /// The new device, once known (for the old device's "Let this iPhone in?").
    public var newDeviceId: String?
    public var newDevicePlatform: String?
    public var newDeviceModel: String?
    /// The new device, once APPROVED: the user it registers for, and a registration-only token.
    public var username: String?
    public var registrationToken: String?
    /// SUCCEEDED: the credential the new device registered.
    public var credentialId: String?
    public var expiresAt: Date

    public init(
        qrSessionId: String, mode: String, status: String, revision: Int, reason: String? = nil, newDeviceId: String? = nil,
        newDevicePlatform: String? = nil, newDeviceModel: String? = nil, username: String? = nil, registrationToken: String? = nil,
        credentialId: String? = nil, expiresAt: Date
    ) {
        self.qrSessionId = qrSessionId
        self.mode = mode
        self.status = status
        self.revision = revision
        self.reason = reason
        self.newDeviceId = newDeviceId
        self.newDevicePlatform = newDevicePlatform
        self.newDeviceModel = newDeviceModel
        self.username = username
        self.registrationToken = registrationToken
        self.credentialId = credentialId
        self.expiresAt = expiresAt
    }

    public static var fullExample: QRBlessView {
        QRBlessView(
            qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", mode: "registerQr", status: "APPROVED", revision: 3, reason: "user_rejected",
            newDeviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", newDevicePlatform: "ios", newDeviceModel: "iPhone15,2", username: "user-4711",
            registrationToken: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQ3MTEifQ.c2lnbmF0dXJl", credentialId: "AQIDBAUGBwgJCgsMDQ4PEA",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}
