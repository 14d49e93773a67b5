import FoundationEssentials

/// A user's non-FIDO method became active, changed or was removed. The authentication service
/// keeps what sign-in needs: the type, the vault reference of the destination (never the
/// address or number itself) and, for TOTP, the secret sealed under a key the two services
/// share (`SIGNET_METHOD_SECRET_KEY`).
public struct MethodChanged: EventPayload {
    public static let eventType = "signet.registration.method.changed.v2"
    public static let topic = Topic.registration

    public var tenantId: String
    /// The user's opaque subject reference (``SubjectRefFormat``), never the username.
    public var subjectRef: String
    public var methodId: String
    /// `email_otp`, `sms_otp` or `totp`.
    public var type: String
    /// `ACTIVE`, `SUSPENDED` or `DELETED`.
    public var status: String
    /// The pii service's reference of the e-mail address or phone number.
    public var piiRef: String?
    /// Its masked form (`e•••@example.com`), for screens.
    public var masked: String?
    /// base64url AES-256-GCM of the TOTP secret.
    public var sealedSecret: String?
    /// The TOTP time step used to confirm the method (sign-in refuses it and earlier ones).
    public var lastTotpStep: Int?
    public var changedAt: Date

    public init(
        tenantId: String, subjectRef: String, methodId: String, type: String, status: String, piiRef: String?, masked: String? = nil,
        sealedSecret: String?, lastTotpStep: Int?, changedAt: Date
    ) {
        self.masked = masked
        self.tenantId = tenantId
        self.subjectRef = subjectRef
        self.methodId = methodId
        self.type = type
        self.status = status
        self.piiRef = piiRef
        self.sealedSecret = sealedSecret
        self.lastTotpStep = lastTotpStep
        self.changedAt = changedAt
    }

    public static var fullExample: MethodChanged {
        MethodChanged(
            tenantId: "demo", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", methodId: "m_0f1e2d3c4b5a69788796a5b4c3d2e1f0", type: "totp", status: "ACTIVE",
            piiRef: "pii_0f1e2d3c4b5a69788796a5b4c3d2e1f0", masked: "e•••@example.com", sealedSecret: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", lastTotpStep: 58_800_000,
            changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: MethodChanged {
        var e = fullExample
        e.piiRef = nil
        e.masked = nil
        e.sealedSecret = nil
        e.lastTotpStep = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        guard methodId.hasPrefix("m_"), methodId.utf8.count == 34 else { throw EventDecodingError.invalidData("methodId") }
        guard MethodTypes.registrable.contains(type) else { throw EventDecodingError.invalidData("type") }
        guard ["ACTIVE", "SUSPENDED", "DELETED"].contains(status) else { throw EventDecodingError.invalidData("status") }
        if let r = piiRef, !(r.hasPrefix("pii_") && r.utf8.count == 36) { throw EventDecodingError.invalidData("piiRef") }
        if let s = sealedSecret, !isBase64URL(s, maxBytes: 512) { throw EventDecodingError.invalidData("sealedSecret") }
    }
}

/// A message to deliver: a one-time code by e-mail or SMS. The destination is a vault
/// reference and the code is sealed to the oob-notification service (`SIGNET_DELIVERY_KEY`,
/// associated data the delivery id): neither appears in plaintext in Kafka.
public struct DeliveryRequested: EventPayload {
    public static let eventType = "signet.oob.delivery.requested.v1"
    public static let topic = Topic.deliveryRequests

    public var tenantId: String
    public var deliveryId: String
    /// `email` or `sms`.
    public var channel: String
    public var piiRef: String
    /// `otp` or `transaction_otp`.
    public var template: String
    public var locale: String
    /// base64url AES-256-GCM of the code.
    public var sealedCode: String
    /// Minutes the code stays valid, and for transactions the amount, currency and payee.
    public var parameters: [String: String]
    /// Not delivered after this (the code is useless then).
    public var expiresAt: Date

    public init(
        tenantId: String, deliveryId: String, channel: String, piiRef: String, template: String, locale: String, sealedCode: String,
        parameters: [String: String], expiresAt: Date
    ) {
        self.tenantId = tenantId
        self.deliveryId = deliveryId
        self.channel = channel
        self.piiRef = piiRef
        self.template = template
        self.locale = locale
        self.sealedCode = sealedCode
        self.parameters = parameters
        self.expiresAt = expiresAt
    }

    public static var fullExample: DeliveryRequested {
        DeliveryRequested(
            tenantId: "demo", deliveryId: "d_0f1e2d3c4b5a69788796a5b4c3d2e1f0", channel: "email", piiRef: "pii_0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            template: "transaction_otp", locale: "en", sealedCode: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            parameters: ["minutes": "5", "amount": "385.00", "currency": "EUR", "payee": "ACME Ltd"], expiresAt: Date(timeIntervalSince1970: 1_764_000_300))
    }
    public static var minimalExample: DeliveryRequested {
        var e = fullExample
        e.template = "otp"
        e.parameters = ["minutes": "5"]
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard deliveryId.hasPrefix("d_"), deliveryId.utf8.count == 34 else { throw EventDecodingError.invalidData("deliveryId") }
        guard ["email", "sms"].contains(channel) else { throw EventDecodingError.invalidData("channel") }
        guard piiRef.hasPrefix("pii_"), piiRef.utf8.count == 36 else { throw EventDecodingError.invalidData("piiRef") }
        guard ["otp", "transaction_otp"].contains(template) else { throw EventDecodingError.invalidData("template") }
        guard (2...16).contains(locale.utf8.count) else { throw EventDecodingError.invalidData("locale") }
        guard isBase64URL(sealedCode, maxBytes: 128) else { throw EventDecodingError.invalidData("sealedCode") }
        guard parameters.count <= 8, parameters.allSatisfy({ $0.key.utf8.count <= 32 && $0.value.utf8.count <= 256 }) else {
            throw EventDecodingError.invalidData("parameters")
        }
    }
}

/// What became of a delivery: `delivered`, `retrying` (with the attempt) or `failed`
/// (dead-lettered after the last attempt, or refused by the provider).
public struct DeliveryStatusChanged: EventPayload {
    public static let eventType = "signet.oob.delivery.status.changed.v1"
    public static let topic = Topic.oob

    public var tenantId: String
    public var deliveryId: String
    public var channel: String
    public var status: String
    public var attempt: Int
    /// A stable error code when not delivered (`smtp_rejected`, `sms_rejected`, `rate_limited`…).
    public var reason: String?
    public var changedAt: Date

    public init(tenantId: String, deliveryId: String, channel: String, status: String, attempt: Int, reason: String?, changedAt: Date) {
        self.tenantId = tenantId
        self.deliveryId = deliveryId
        self.channel = channel
        self.status = status
        self.attempt = attempt
        self.reason = reason
        self.changedAt = changedAt
    }

    public static var fullExample: DeliveryStatusChanged {
        DeliveryStatusChanged(
            tenantId: "demo", deliveryId: "d_0f1e2d3c4b5a69788796a5b4c3d2e1f0", channel: "sms", status: "retrying", attempt: 2,
            reason: "sms_unavailable", changedAt: Date(timeIntervalSince1970: 1_764_000_010))
    }
    public static var minimalExample: DeliveryStatusChanged {
        var e = fullExample
        e.status = "delivered"
        e.reason = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard ["delivered", "retrying", "failed"].contains(status) else { throw EventDecodingError.invalidData("status") }
        guard ["email", "sms"].contains(channel) else { throw EventDecodingError.invalidData("channel") }
    }
}
