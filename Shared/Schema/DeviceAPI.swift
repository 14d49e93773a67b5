import FoundationEssentials
import JSON

/// A mobile app creates or updates its device (`POST /v1/tenants/{tenant}/devices`, signed by
/// the device key it carries).
public struct DeviceUpsertRequest: Codable, Sendable, Equatable {
    /// The device key: a public P-256 JWK; the app signs with it without user presence.
    public var deviceKey: JSONValue
    /// The user-auth key (a public P-256 JWK), usable only with user presence (passcode,
    /// biometrics): present when the phone has its security on.
    public var userAuthKey: JSONValue?
    /// `ios` or `android`.
    public var platform: String
    public var model: String?
    public var osVersion: String?
    /// The app's bundle id (iOS, the APNs topic) or package name (Android).
    public var appId: String
    /// The APNs device token (hex) or FCM registration token.
    public var pushToken: String?
    /// The phone's language (`en`, `fr-CA`): the locale of templated approval pushes when the
    /// approval request names none. Absent: the one stored stays.
    public var locale: String?

    public init(
        deviceKey: JSONValue, userAuthKey: JSONValue? = nil, platform: String, model: String? = nil, osVersion: String? = nil, appId: String,
        pushToken: String? = nil, locale: String? = nil
    ) {
        self.locale = locale
        self.deviceKey = deviceKey
        self.userAuthKey = userAuthKey
        self.platform = platform
        self.model = model
        self.osVersion = osVersion
        self.appId = appId
        self.pushToken = pushToken
    }

    static let exampleKey: JSONValue = .object([
        "kty": .string("EC"), "crv": .string("P-256"), "x": .string("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"),
        "y": .string("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"),
    ])

    public static var fullExample: DeviceUpsertRequest {
        DeviceUpsertRequest(
            deviceKey: exampleKey, userAuthKey: exampleKey, platform: "ios", model: "iPhone15,2", osVersion: "18.1", appId: "com.example.bank",
            pushToken: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad", locale: "fr-CA")
    }
}

/// The answer to a device create or update.
public struct DeviceRegistration: Codable, Sendable, Equatable {
    /// What the call found, as the app SDK expects it: `newDevice`, `activeDevice`,
    /// `inactiveDevice` (no call for the tenant's inactivity period), `securityDisabled` (the
    /// user-auth key is gone), `securityEnabled` (a user-auth key where there was none), or
    /// `invalidDevice` (the device was revoked; no token).
    public var status: String
    public var deviceId: String
    /// ES256 JWT (`typ: device-id+jwt`, `sub` the device id, `aud` the tenant) signed with the
    /// tenant's device-identifier key, published at the service's JWKS; the app hands it to
    /// its RP, which binds the device to a user with it. Absent for `invalidDevice`.
    public var deviceToken: String?
    public var bound: Bool
    public var securityEnabled: Bool

    public init(status: String, deviceId: String, deviceToken: String?, bound: Bool, securityEnabled: Bool) {
        self.status = status
        self.deviceId = deviceId
        self.deviceToken = deviceToken
        self.bound = bound
        self.securityEnabled = securityEnabled
    }

    public static let statuses = ["newDevice", "activeDevice", "inactiveDevice", "securityDisabled", "securityEnabled", "invalidDevice"]

    public static var fullExample: DeviceRegistration {
        DeviceRegistration(
            status: "newDevice", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", deviceToken: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJkdiJ9.c2ln", bound: false,
            securityEnabled: true)
    }
}

/// A device as its RP and its user see it (never its keys' private parts, never its push
/// token).
public struct DeviceResource: Codable, Sendable, Equatable {
    public var deviceId: String
    public var platform: String
    public var model: String?
    public var osVersion: String?
    public var appId: String
    /// The user it is bound to, if any.
    public var username: String?
    /// `ACTIVE` or `REVOKED`.
    public var status: String
    /// Whether it has a user-auth key (ESSENTIAL approvals need one).
    public var securityEnabled: Bool
    /// False when the device made no call for the inactivity period.
    public var active: Bool
    /// Whether a push token is on file that the provider has not reported gone.
    public var pushEnabled: Bool
    public var createdAt: Date
    public var lastSeenAt: Date

    public init(
        deviceId: String, platform: String, model: String?, osVersion: String?, appId: String, username: String?, status: String, securityEnabled: Bool,
        active: Bool, pushEnabled: Bool, createdAt: Date, lastSeenAt: Date
    ) {
        self.deviceId = deviceId
        self.platform = platform
        self.model = model
        self.osVersion = osVersion
        self.appId = appId
        self.username = username
        self.status = status
        self.securityEnabled = securityEnabled
        self.active = active
        self.pushEnabled = pushEnabled
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
    }

    public static var fullExample: DeviceResource {
        DeviceResource(
            deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", platform: "ios", model: "iPhone15,2", osVersion: "18.1", appId: "com.example.bank",
            username: "user-4711", status: "ACTIVE", securityEnabled: true, active: true, pushEnabled: true,
            createdAt: Date(timeIntervalSince1970: 1_764_000_000), lastSeenAt: Date(timeIntervalSince1970: 1_764_000_300))
    }
}

/// A user's devices.
public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceResource]
    public init(devices: [DeviceResource]) { self.devices = devices }
    public static var fullExample: DeviceList { DeviceList(devices: [DeviceResource.fullExample]) }
}

/// Binds a device to a user: the device identifier JWT the app got at create or update.
public struct DeviceBindRequest: Codable, Sendable, Equatable {
    public var deviceToken: String
    public init(deviceToken: String) { self.deviceToken = deviceToken }
    public static var fullExample: DeviceBindRequest { DeviceBindRequest(deviceToken: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJkdiJ9.c2ln") }
}

/// A new push token from the device.
public struct PushTokenUpdate: Codable, Sendable, Equatable {
    public var pushToken: String
    public init(pushToken: String) { self.pushToken = pushToken }
    public static var fullExample: PushTokenUpdate { PushTokenUpdate(pushToken: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad") }
}

/// Device ids: `dv_` and 32 hex digits.
public enum DeviceID {
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("dv_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// Approval ids: `ap_` and 32 hex digits.
public enum ApprovalID {
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("ap_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
