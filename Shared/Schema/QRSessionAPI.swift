import FoundationEssentials

/// A page asks for a QR code that the user's phone scans
/// (`POST /v1/tenants/{tenant}/qr-sessions`, RP API key; or the internal route, for the
/// authentication service's `qr` sign-in method).
public struct QRSessionCreateRequest: Codable, Sendable, Equatable {
    /// `authenticate` or `register` (`bless` answers `qr_purpose_unavailable`).
    public var purpose: String
    /// When set, only a device bound to this user may claim the session; `register` needs it
    /// (the user the phone registers an authenticator for).
    public var username: String?
    /// The sign-in flow the phone completes (set by the authentication service).
    public var signinId: String?
    /// `deepLink`, `universalLink` or `compact` (default: the tenant's `defaultQrType`, else
    /// `SIGNET_OOB_QR_DEFAULT_TYPE`).
    public var qrType: String?
    /// 30-600 (default 120).
    public var expiresInSeconds: Int?
    /// Where the universal link lives (`<webUrl>/qr/<id>`, the page a phone without the app
    /// opens): on one of the tenant's origins (default: the tenant's `webUrl`, else its first
    /// https origin).
    public var webUrl: String?

    public init(
        purpose: String, username: String? = nil, signinId: String? = nil, qrType: String? = nil, expiresInSeconds: Int? = nil, webUrl: String? = nil
    ) {
        self.purpose = purpose
        self.username = username
        self.signinId = signinId
        self.qrType = qrType
        self.expiresInSeconds = expiresInSeconds
        self.webUrl = webUrl
    }

    public static var fullExample: QRSessionCreateRequest {
        QRSessionCreateRequest(
            purpose: "authenticate", username: "user-4711", signinId: "si_0f1e2d3c4b5a69788796a5b4c3d2e1f0", qrType: "universalLink",
            expiresInSeconds: 120, webUrl: "https://bank.example/signin")
    }
}

/// The `qr` sign-in method's challenge body (`POST …/signins/{signinId}/methods/qr/challenge`),
/// optional: a page may ask for a code that lives shorter than the default.
public struct QRChallengeRequest: Codable, Sendable, Equatable {
    /// 30-120 (default 120): how long the code can be scanned.
    public var expiresInSeconds: Int?

    public init(expiresInSeconds: Int? = nil) {
        self.expiresInSeconds = expiresInSeconds
    }

    public static var fullExample: QRChallengeRequest { QRChallengeRequest(expiresInSeconds: 60) }
}

/// A QR session just created: the payload the code encodes (only the session's unguessable
/// id, no personal data), the code as PNG (base64) and SVG, and the watch token with which a
/// page without the RP's key reads the session's status.
public struct QRSessionCreated: Codable, Sendable, Equatable {
    public var qrSessionId: String
    public var purpose: String
    public var qrType: String
    public var qrPayload: String
    /// The code as a PNG image, standard base64.
    public var qrCodePng: String
    public var qrCodeSvg: String
    /// Reads the status (`Authorization: Bearer` or `?watchToken=` for an `EventSource`); shown
    /// only here.
    public var watchToken: String
    public var expiresAt: Date

    public init(
        qrSessionId: String, purpose: String, qrType: String, qrPayload: String, qrCodePng: String, qrCodeSvg: String, watchToken: String,
        expiresAt: Date
    ) {
        self.qrSessionId = qrSessionId
        self.purpose = purpose
        self.qrType = qrType
        self.qrPayload = qrPayload
        self.qrCodePng = qrCodePng
        self.qrCodeSvg = qrCodeSvg
        self.watchToken = watchToken
        self.expiresAt = expiresAt
    }

    public static var fullExample: QRSessionCreated {
        QRSessionCreated(
            qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", purpose: "authenticate", qrType: "universalLink",
            qrPayload: "https://bank.example/qr/qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", qrCodePng: "iVBORw0KGgo=", qrCodeSvg: "<svg/>",
            watchToken: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}

/// A QR session's status, as its page (watch token), its RP and other Signet services read it.
public struct QRSessionResource: Codable, Sendable, Equatable {
    public var qrSessionId: String
    public var purpose: String
    /// See ``QRSessionStatus``.
    public var status: String
    /// Grows with each change (the `id` of its Server-Sent Event).
    public var revision: Int
    /// The user of the device that claimed it (RP and internal readers only, never the page).
    public var username: String?
    /// The device that claimed it (RP and internal readers only).
    public var deviceId: String?
    public var signinId: String?
    /// Why it failed (`user_rejected`; for `register` also `credential_not_registered`).
    public var reason: String?
    /// `register`: the credential the phone registered, checked with the registration service
    /// before the session SUCCEEDED.
    public var credentialId: String?
    public var expiresAt: Date
    public var updatedAt: Date

    public init(
        qrSessionId: String, purpose: String, status: String, revision: Int, username: String?, deviceId: String?, signinId: String?, reason: String?,
        credentialId: String? = nil, expiresAt: Date, updatedAt: Date
    ) {
        self.qrSessionId = qrSessionId
        self.purpose = purpose
        self.status = status
        self.revision = revision
        self.username = username
        self.deviceId = deviceId
        self.signinId = signinId
        self.reason = reason
        self.credentialId = credentialId
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
    }

    public static var fullExample: QRSessionResource {
        QRSessionResource(
            qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", purpose: "authenticate", status: "FAILED", revision: 3, username: "user-4711",
            deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", signinId: "si_0f1e2d3c4b5a69788796a5b4c3d2e1f0", reason: "user_rejected",
            credentialId: "AQIDBAUGBwgJCgsMDQ4PEA", expiresAt: Date(timeIntervalSince1970: 1_764_000_120), updatedAt: Date(timeIntervalSince1970: 1_764_000_030))
    }
}

/// What the scanning phone learns when it claims a QR session: what it is for and whose
/// tenant, never the page's user. For `register`, also the phone's own user and a
/// registration-only token for them (`qr` claim: the session), with which the phone runs the
/// registration service's ceremonies; it lasts until the session expires.
public struct QRSessionClaim: Codable, Sendable, Equatable {
    public var qrSessionId: String
    public var purpose: String
    public var status: String
    /// The tenant's display name, for "Sign in to … on the other device?".
    public var tenantName: String
    /// `register`: the user the authenticator is registered for (the phone's own user).
    public var username: String?
    /// `register`: a registration-only token for ``username`` (the registration service's
    /// options and finish routes take it; every other route refuses it).
    public var registrationToken: String?
    public var expiresAt: Date

    public init(
        qrSessionId: String, purpose: String, status: String, tenantName: String, username: String? = nil, registrationToken: String? = nil,
        expiresAt: Date
    ) {
        self.qrSessionId = qrSessionId
        self.purpose = purpose
        self.status = status
        self.tenantName = tenantName
        self.username = username
        self.registrationToken = registrationToken
        self.expiresAt = expiresAt
    }

    public static var fullExample: QRSessionClaim {
        QRSessionClaim(
            qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", purpose: "register", status: "SCANNED", tenantName: "Example Bank",
            username: "user-4711", registrationToken: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQ3MTEifQ.c2lnbmF0dXJl",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}

/// The claiming phone's answer (`POST …/devices/{deviceId}/qr-sessions/{id}/decision`), signed
/// like every device call by its `Device-Proof` (method, path, body hash, fresh nonce).
public struct QRSessionDecisionRequest: Codable, Sendable, Equatable {
    /// `ACCEPT` or `REJECT`.
    public var decision: String
    /// `register`, with `ACCEPT`: the credential the phone registered (base64url), which the oob
    /// service checks with the registration service before the session SUCCEEDED.
    public var credentialId: String?
    /// `authenticate`, with `ACCEPT` (required there, refused elsewhere): the user's consent,
    /// ES256 by the device's user-auth key (raw r‖s, base64url) over
    /// ``QRSignInSignature/message(qrSessionId:decision:)``. The `Device-Proof` shows the
    /// device; this shows its user unlocked the key (biometry or PIN), as an ESSENTIAL
    /// approval's answer does.
    public var signature: String?
    public init(decision: String, credentialId: String? = nil, signature: String? = nil) {
        self.decision = decision
        self.credentialId = credentialId
        self.signature = signature
    }
    /// Every member (no purpose takes both `credentialId` and `signature`).
    public static var fullExample: QRSessionDecisionRequest {
        QRSessionDecisionRequest(decision: "ACCEPT", credentialId: "AQIDBAUGBwgJCgsMDQ4PEA", signature: String(repeating: "c2lnbmF0dXJl", count: 7) + "AA")
    }
}

/// What a phone signs with its user-auth key to accept a sign-in's QR code
/// (`purpose: authenticate`): `signet-qr-signin-v1\n<qrSessionId>\n<decision>`, UTF-8. The
/// session id is unique and bound to one sign-in and tenant, so a signature answers that
/// code only.
public enum QRSignInSignature {
    public static func message(qrSessionId: String, decision: String) -> [UInt8] {
        Array("signet-qr-signin-v1\n\(qrSessionId)\n\(decision)".utf8)
    }
}

/// The oob service asks the authentication service for a QR registration's token
/// (`POST /v1/internal/tenants/{tenant}/qr-registration-tokens`, internal token, oob only):
/// registration-only (`sign_up` claim, the registration audience) for `username`, with the
/// `qr` claim naming the session, valid until the session expires (at most 600 s). No session
/// is ever made from it: the sign-up and sign-in exchanges refuse a token with `qr`.
public struct QRRegistrationTokenRequest: Codable, Sendable, Equatable {
    public var username: String
    public var qrSessionId: String
    public var expiresAt: Date

    public init(username: String, qrSessionId: String, expiresAt: Date) {
        self.username = username
        self.qrSessionId = qrSessionId
        self.expiresAt = expiresAt
    }

    public static var fullExample: QRRegistrationTokenRequest {
        QRRegistrationTokenRequest(username: "user-4711", qrSessionId: "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0", expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}

/// The token of ``QRRegistrationTokenRequest``.
public struct QRRegistrationToken: Codable, Sendable, Equatable {
    public var registrationToken: String
    public var expiresAt: Date

    public init(registrationToken: String, expiresAt: Date) {
        self.registrationToken = registrationToken
        self.expiresAt = expiresAt
    }

    public static var fullExample: QRRegistrationToken {
        QRRegistrationToken(
            registrationToken: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQ3MTEifQ.c2lnbmF0dXJl", expiresAt: Date(timeIntervalSince1970: 1_764_000_120))
    }
}

/// Whether a device can use QR codes (`GET /v1/tenants/{tenant}/devices/{deviceId}/qr-capabilities`,
/// signed by the device): the SDK's `checkRegPossible` and `checkAuthPossible`. Each needs the
/// device bound to a user, active (status and recent use), with security enabled, and the
/// tenant offering the purpose; `reasons` names every condition not met.
public struct QRCapabilities: Codable, Sendable, Equatable {
    /// `checkRegPossible`: the device may scan a `register` code.
    public var registerPossible: Bool
    /// `checkAuthPossible`: the device may scan an `authenticate` code.
    public var authenticatePossible: Bool
    /// `device_not_bound`, `device_inactive`, `security_disabled`, `register_not_allowed`,
    /// `authenticate_not_allowed`.
    public var reasons: [String]

    public init(registerPossible: Bool, authenticatePossible: Bool, reasons: [String]) {
        self.registerPossible = registerPossible
        self.authenticatePossible = authenticatePossible
        self.reasons = reasons
    }

    public static let allReasons = ["device_not_bound", "device_inactive", "security_disabled", "register_not_allowed", "authenticate_not_allowed"]

    public static var fullExample: QRCapabilities {
        QRCapabilities(registerPossible: false, authenticatePossible: true, reasons: ["register_not_allowed"])
    }
}

/// The statuses of a QR session: `PENDING` (shown, not scanned), `SCANNED` (a phone claimed
/// it and is working), then one of `SUCCEEDED`, `FAILED`, `EXPIRED`.
public enum QRSessionStatus {
    public static let pending = "PENDING"
    public static let scanned = "SCANNED"
    /// `bless`: the old device's user approved (signed with its user-auth key); the new
    /// device registers now.
    public static let approved = "APPROVED"
    public static let succeeded = "SUCCEEDED"
    public static let failed = "FAILED"
    public static let expired = "EXPIRED"
    public static let all = [pending, scanned, approved, succeeded, failed, expired]
    public static let finished: Set<String> = [succeeded, failed, expired]
}

/// The purposes of a QR session.
public enum QRSessionPurpose {
    public static let authenticate = "authenticate"
    public static let register = "register"
    public static let bless = "bless"
    public static let all = [authenticate, register, bless]
}

/// The forms of a QR payload, smallest last: an app deep link (`<scheme>://qr/<id>`), a
/// universal https link on the tenant's domain (`<webUrl or first origin>/qr/<id>`), or the
/// bare id for apps that know the endpoint.
public enum QRPayloadType: String, Sendable, CaseIterable {
    case deepLink
    case universalLink
    case compact

    /// The payload for session `id`.
    public func payload(id: String, scheme: String, origin: String) -> String {
        switch self {
        case .deepLink: "\(scheme)://qr/\(id)"
        case .universalLink: "\(origin)/qr/\(id)"
        case .compact: id
        }
    }

    /// The session id in a payload of any form, or nil.
    public static func sessionId(in payload: String) -> String? {
        let last = payload.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? payload
        return QRSessionID.isValid(last) ? last : nil
    }
}

/// QR session ids: `qr_` and 32 hex digits (128 random bits).
public enum QRSessionID {
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("qr_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
