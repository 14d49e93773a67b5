import FoundationEssentials

/// A login page's pairing code (TruCode): `POST /v1/tenants/{tenant}/trucodes` (RP API key).
public struct TruCodeCreateRequest: Codable, Sendable, Equatable {
    /// 30-600 (default 120).
    public var expiresInSeconds: Int?

    public init(expiresInSeconds: Int? = nil) { self.expiresInSeconds = expiresInSeconds }

    public static var fullExample: TruCodeCreateRequest { TruCodeCreateRequest(expiresInSeconds: 120) }
}

/// A TruCode just created: what the page shows (the payload, only the code's unguessable id,
/// as a deep link; the same as a PNG QR code, standard base64).
public struct TruCodeCreated: Codable, Sendable, Equatable {
    public var truCodeId: String
    public var payload: String
    public var qrCodePng: String
    public var expiresAt: Date

    public init(truCodeId: String, payload: String, qrCodePng: String, expiresAt: Date) {
        self.truCodeId = truCodeId
        self.payload = payload
        self.qrCodePng = qrCodePng
        self.expiresAt = expiresAt
    }

    public static var fullExample: TruCodeCreated {
        TruCodeCreated(
            truCodeId: "tc_0f1e2d3c4b5a69788796a5b4c3d2e1f0", payload: "signet://trucode/tc_0f1e2d3c4b5a69788796a5b4c3d2e1f0", qrCodePng: "iVBORw0KGgo=",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}

/// A TruCode as its RP reads it (`GET …/trucodes/{id}`), and as the pairing phone learns it.
/// `PENDING` (shown), `PAIRED` (a signed-in phone paired it with its user), `USED` (the RP's
/// approval request named it), `EXPIRED`.
public struct TruCodeResource: Codable, Sendable, Equatable {
    public var truCodeId: String
    public var status: String
    /// The paired user (RP only).
    public var username: String?
    /// The paired device (RP only).
    public var deviceId: String?
    public var expiresAt: Date
    public var pairedAt: Date?

    public init(truCodeId: String, status: String, username: String?, deviceId: String?, expiresAt: Date, pairedAt: Date?) {
        self.truCodeId = truCodeId
        self.status = status
        self.username = username
        self.deviceId = deviceId
        self.expiresAt = expiresAt
        self.pairedAt = pairedAt
    }

    public static var fullExample: TruCodeResource {
        TruCodeResource(
            truCodeId: "tc_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "PAIRED", username: "user-4711", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120), pairedAt: Date(timeIntervalSince1970: 1_764_000_030))
    }
}

/// TruCode statuses and ids.
public enum TruCodeStatus {
    public static let pending = "PENDING"
    public static let paired = "PAIRED"
    public static let used = "USED"
    public static let expired = "EXPIRED"
}

/// TruCode ids: `tc_` and 32 hex digits (128 random bits).
public enum TruCodeID {
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("tc_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The id in a payload (`<scheme>://trucode/<id>` or the bare id), or nil.
    public static func id(in payload: String) -> String? {
        let last = payload.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? payload
        return isValid(last) ? last : nil
    }
}
