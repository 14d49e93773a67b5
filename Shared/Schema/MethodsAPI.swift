import FoundationEssentials

/// `POST /v1/tenants/{tenant}/users/{username}/methods` body.
public struct MethodCreateRequest: Codable, Sendable, Equatable {
    /// `email_otp`, `sms_otp` or `totp`.
    public var type: String
    public var email: String?
    public var phone: String?
    public var friendlyName: String?
    /// Locale of the confirmation message (`en`, `fr-CA`…).
    public var locale: String?

    public init(type: String, email: String? = nil, phone: String? = nil, friendlyName: String? = nil, locale: String? = nil) {
        self.type = type
        self.email = email
        self.phone = phone
        self.friendlyName = friendlyName
        self.locale = locale
    }

    public static var fullExample: MethodCreateRequest {
        MethodCreateRequest(type: "email_otp", email: "erin@example.com", phone: "+447900000000", friendlyName: "Work e-mail", locale: "en")
    }
}

/// A user's method (other than FIDO credentials, which are listed as `fido2`).
public struct MethodResource: Codable, Sendable, Equatable {
    public var methodId: String
    /// `email_otp`, `sms_otp`, `totp` or `fido2`.
    public var type: String
    /// `PENDING_CONFIRMATION`, `ACTIVE` or `SUSPENDED`.
    public var status: String
    /// `e•••@example.com`, `+4•••••••89`.
    public var masked: String?
    public var friendlyName: String?
    /// TOTP setup only: the `otpauth://` URI and its QR code (PNG, base64).
    public var otpauthUri: String?
    public var qrCodePng: String?
    public var createdAt: Date
    public var confirmedAt: Date?

    public init(
        methodId: String, type: String, status: String, masked: String? = nil, friendlyName: String? = nil, otpauthUri: String? = nil,
        qrCodePng: String? = nil, createdAt: Date, confirmedAt: Date? = nil
    ) {
        self.methodId = methodId
        self.type = type
        self.status = status
        self.masked = masked
        self.friendlyName = friendlyName
        self.otpauthUri = otpauthUri
        self.qrCodePng = qrCodePng
        self.createdAt = createdAt
        self.confirmedAt = confirmedAt
    }

    public static var fullExample: MethodResource {
        MethodResource(
            methodId: "m_0f1e2d3c4b5a69788796a5b4c3d2e1f0", type: "totp", status: "ACTIVE", masked: "e•••@example.com", friendlyName: "Phone app",
            otpauthUri: "otpauth://totp/Demo:erin?secret=JBSWY3DPEHPK3PXP&issuer=Demo&algorithm=SHA1&digits=6&period=30",
            qrCodePng: "iVBORw0KGgo=", createdAt: Date(timeIntervalSince1970: 1_764_000_000), confirmedAt: Date(timeIntervalSince1970: 1_764_000_060))
    }
}

/// `POST …/methods/{methodId}/confirm` body, and OTP/TOTP verify bodies of sign-in flows.
public struct CodeRequest: Codable, Sendable, Equatable {
    public var code: String
    public init(code: String) { self.code = code }
    public static var fullExample: CodeRequest { CodeRequest(code: "123456") }
}

/// `GET /v1/tenants/{tenant}/users/{username}/methods`.
public struct MethodList: Codable, Sendable, Equatable {
    public var methods: [MethodResource]
    public init(methods: [MethodResource]) { self.methods = methods }
}

/// The method types a user registers besides FIDO credentials, and every method name sign-in
/// flows know.
public enum MethodTypes {
    public static let registrable = ["email_otp", "sms_otp", "totp"]
    public static let signIn = ["fido2", "fido2_uv", "uaf", "email_otp", "sms_otp", "totp", "external_jwt", "external_password", "oob_push", "qr"]
}
