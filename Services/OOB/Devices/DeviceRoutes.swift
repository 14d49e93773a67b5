import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit
import Tokens

/// Devices: the app creates or updates its device (proving the device key), reads itself and
/// updates its push token (proving it again each time); the RP or the signed-in user binds a
/// device to the user with the device identifier JWT, lists and unbinds; the identifier keys
/// are published.
struct DeviceRoutes: Sendable {
    let context: ServiceContext
    let store: DeviceStore
    let keys: DeviceTokenKeys
    let issuer: String
    let inactiveAfter: TimeInterval
    let sessions: SessionTokenVerifier?

    /// How long a device identifier JWT is valid: the app hands it to its RP at once.
    static let tokenLifetime: TimeInterval = 600
    static let tokenType = "device-id+jwt"

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/devices", context.deviceKeyHolder(store)) { request, ctx in try await upsert(request, ctx) }
        router.get("/v1/tenants/{tenant}/devices/{deviceId}", context.deviceSigned(store)) { _, ctx in
            let device = try await load(ctx.parameter("deviceId"), tenant: ctx.parameter("tenant"))
            return try .json(device.resource(inactiveAfter: inactiveAfter), headers: [("Cache-Control", "no-store")])
        }
        router.put("/v1/tenants/{tenant}/devices/{deviceId}/push-token", context.deviceSigned(store)) { request, ctx in
            try await updatePushToken(request, ctx)
        }
        let userGuard = context.relyingPartyOrSelf(sessions: sessions)
        router.post("/v1/tenants/{tenant}/users/{username}/devices", userGuard) { request, ctx in try await bind(request, ctx) }
        router.get("/v1/tenants/{tenant}/users/{username}/devices", userGuard) { _, ctx in
            let username = try ctx.username()
            let devices = try await context.pool.withConnection { try await DeviceStore.devices(of: username, tenant: ctx.parameter("tenant"), on: $0) }
            return try .json(DeviceList(devices: devices.map { $0.resource(inactiveAfter: inactiveAfter) }), headers: [("Cache-Control", "no-store")])
        }
        router.delete("/v1/tenants/{tenant}/users/{username}/devices/{deviceId}", userGuard) { _, ctx in try await unbind(ctx) }
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/revoke", context.relyingParty) { _, ctx in try await revoke(ctx) }
        router.get("/.well-known/jwks.json", .open) { _, _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(try await keys.allKeys().utf8))
        }
        router.get("/v1/tenants/{tenant}/.well-known/jwks.json", .open) { _, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(try await keys.ring(for: tenant).keySet.jsonString.utf8))
        }
    }

    // MARK: - Create or update

    /// A public P-256 JWK (ES256), or 400 naming `field`.
    static func p256Key(_ value: JSONValue, field: String) throws -> JWK {
        guard case .object(let members) = value, let key = try? JWK(jsonObject: members), key.keyType == "EC",
            (try? JWSVerificationKey(jwk: key, allowedAlgorithms: [.es256])) != nil
        else { throw HTTPError.invalid(field, "\(field) must be a public P-256 JWK (ES256).") }
        return key
    }

    static func checkText(_ value: String?, _ field: String, max: Int) throws {
        guard let value else { return }
        guard (1...max).contains(value.utf8.count), value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw HTTPError.invalid(field, "\(field) must be 1-\(max) bytes without control characters.")
        }
    }

    func upsert(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        guard case .deviceKeyHolder(let tenant, let thumbprint) = ctx.principal else { throw HTTPError(.unauthorized) }
        let body = try request.decode(DeviceUpsertRequest.self)
        let deviceKey = try Self.p256Key(body.deviceKey, field: "deviceKey")
        let userAuthKey = try body.userAuthKey.map { try Self.p256Key($0, field: "userAuthKey") }
        if let userAuthKey, userAuthKey.thumbprint == deviceKey.thumbprint {
            throw HTTPError.invalid("userAuthKey", "The user-auth key must be another key than the device key.")
        }
        guard ["ios", "android"].contains(body.platform) else { throw HTTPError.invalid("platform", "platform is ios or android.") }
        guard (1...255).contains(body.appId.utf8.count), body.appId.utf8.allSatisfy({ DeviceProof.isBase64URLByte($0) || $0 == UInt8(ascii: ".") })
        else { throw HTTPError.invalid("appId", "appId is a bundle id or package name (letters, digits, '.', '-', '_').") }
        try Self.checkText(body.model, "model", max: 64)
        try Self.checkText(body.osVersion, "osVersion", max: 32)
        if let token = body.pushToken {
            guard (1...4096).contains(token.utf8.count), token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw HTTPError.invalid("pushToken", "pushToken is 1-4096 printable ASCII characters.")
            }
        }
        if let locale = body.locale, !PushTemplate.isLocale(locale) { throw HTTPError.invalid("locale", "A locale like en or fr-CA.") }
        guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
        let now = Date()
        let keyText = JSONValue.object(deviceKey.jsonObject).jsonString
        let userAuthText = userAuthKey.map { JSONValue.object($0.jsonObject).jsonString }
        func attempt() async throws -> (String, StoredDevice) {
            try await context.withTransaction { conn -> (String, StoredDevice) in
                guard var device = try await DeviceStore.find(tenant: tenant, thumbprint: thumbprint, on: conn) else {
                    let id = "dv_" + Hex.encode(SecureRandom.bytes(16))
                    let device = StoredDevice(
                        id: id, tenant: tenant, thumbprint: thumbprint, deviceKey: keyText, userAuthKey: userAuthText, platform: body.platform,
                        model: body.model, osVersion: body.osVersion, appId: body.appId,
                        sealedPushToken: try body.pushToken.map { try store.sealPushToken($0, tenant: tenant, device: id) }, pushTokenInvalidAt: nil,
                        username: nil, status: "ACTIVE", createdAt: now, updatedAt: now, lastSeenAt: now)
                    try await DeviceStore.insert(device, on: conn)
                    if let locale = body.locale { try await PushTemplate.recordDeviceLocale(locale, device: id, tenant: tenant, on: conn) }
                    try await Outbox.enqueue(device.changed("created", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
                    return ("newDevice", device)
                }
                guard device.status == "ACTIVE" else { return ("invalidDevice", device) }
                // Keys compared by thumbprint (RFC 7638): the same key sent with other optional
                // members is the same key. A stored key that no longer parses counts as another.
                let storedAuth = device.userAuthKey.flatMap { try? JWK(json: $0) }?.thumbprint
                let newUserAuthKey = userAuthKey.map { $0.thumbprint != storedAuth } ?? false
                let status: String
                if device.userAuthKey != nil && userAuthKey == nil {
                    status = "securityDisabled"
                } else if newUserAuthKey {
                    // A user-auth key where there was none, or another one: either way the key
                    // that answers ESSENTIAL approvals changed.
                    status = "securityEnabled"
                } else if now.timeIntervalSince(device.lastSeenAt) > inactiveAfter {
                    status = "inactiveDevice"
                } else {
                    status = "activeDevice"
                }
                // This call is proven by the device key alone, which signs without the user. A new
                // user-auth key on a bound device (added, or replacing one: after a change of the
                // phone's biometrics, or by whoever holds the device key) must not inherit the
                // binding, or the device key alone would answer ESSENTIAL and EXECUTIVE approvals
                // and confirm transactions with a key of its choosing: the device is unbound, and
                // the RP binds it again (with the deviceToken of this answer) once it has
                // authenticated the user. Dropping the key only lowers what the device can answer.
                let unbinds = newUserAuthKey && device.username != nil
                if unbinds { device.username = nil }
                device.userAuthKey = userAuthText
                device.platform = body.platform
                device.model = body.model
                device.osVersion = body.osVersion
                device.appId = body.appId
                if let token = body.pushToken {
                    device.sealedPushToken = try store.sealPushToken(token, tenant: tenant, device: device.id)
                    device.pushTokenInvalidAt = nil
                }
                device.updatedAt = now
                device.lastSeenAt = now
                try await DeviceStore.update(device, on: conn)
                if let locale = body.locale { try await PushTemplate.recordDeviceLocale(locale, device: device.id, tenant: tenant, on: conn) }
                try await Outbox.enqueue(
                    device.changed(unbinds ? "unbound" : "updated", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant,
                    on: conn)
                if unbinds { ctx.logger.notice("device unbound: its user-auth key changed", metadata: ["signet.device.id": .string(device.id)]) }
                return (status, device)
            }
        }
        let (status, device): (String, StoredDevice)
        do {
            (status, device) = try await attempt()
        } catch let error as PostgresError where error.isUniqueViolation {
            // Two first calls with one new key at once: both found no device, the other created
            // it; this one, again, finds it and updates it (a 500 before).
            (status, device) = try await attempt()
        }
        let token = status == "invalidDevice" ? nil : try await identifierToken(for: device, now: now)
        ctx.logger.info("device \(status == "newDevice" ? "created" : "updated")", metadata: ["signet.device.id": .string(device.id)])
        return try .json(
            DeviceRegistration(status: status, deviceId: device.id, deviceToken: token, bound: device.username != nil, securityEnabled: device.securityEnabled),
            status: status == "newDevice" ? 201 : 200, headers: [("Cache-Control", "no-store")])
    }

    /// The device identifier JWT: ES256 under the tenant's key, `sub` the device id.
    func identifierToken(for device: StoredDevice, now: Date) async throws -> String {
        let ring = try await keys.ring(for: device.tenant)
        let claims = JWTClaims(
            issuer: issuer, subject: device.id, audience: [device.tenant], expiresAt: now.addingTimeInterval(Self.tokenLifetime), issuedAt: now,
            id: Hex.encode(SecureRandom.bytes(16)), extra: ["jkt": .string(device.thumbprint)])
        return try ring.signer.sign(claims, type: Self.tokenType)
    }

    // MARK: - Push token

    func updatePushToken(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(PushTokenUpdate.self)
        guard (1...4096).contains(body.pushToken.utf8.count), body.pushToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError.invalid("pushToken", "pushToken is 1-4096 printable ASCII characters.")
        }
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("deviceId")
        let now = Date()
        try await context.withTransaction { conn in
            guard var device = try await DeviceStore.load(id, tenant: tenant, on: conn, forUpdate: true) else {
                throw HTTPError(.deviceNotFound, detail: "No such device.")
            }
            device.sealedPushToken = try store.sealPushToken(body.pushToken, tenant: tenant, device: id)
            device.pushTokenInvalidAt = nil
            device.updatedAt = now
            try await DeviceStore.update(device, on: conn)
            try await Outbox.enqueue(device.changed("push_token_updated", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
        }
        return HTTPResponse(status: 204)
    }

    // MARK: - Binding

    func bind(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        let body = try request.decode(DeviceBindRequest.self)
        // A key another replica added since this one read the ring is read at once.
        let ring = try await keys.ring(for: tenant, holding: (try? JWS(compact: body.deviceToken))?.header.keyID)
        let verifier = JWTVerifier(
            keySet: ring.keySet,
            options: JWTValidationOptions(
                issuer: issuer, audience: tenant, maximumLifetime: Self.tokenLifetime, requiredClaims: ["sub", "jkt"], expectedType: Self.tokenType))
        let jwt: JWT
        do {
            jwt = try verifier.verify(body.deviceToken, now: Date())
        } catch {
            throw HTTPError(.deviceTokenInvalid, detail: "The device token is not valid (\(error.code.rawValue)).", field: "deviceToken")
        }
        guard let subject = jwt.claims.subject, DeviceID.isValid(subject) else {
            throw HTTPError(.deviceTokenInvalid, detail: "The device token names no device.", field: "deviceToken")
        }
        let now = Date()
        let device = try await context.withTransaction { conn -> StoredDevice in
            guard var device = try await DeviceStore.load(subject, tenant: tenant, on: conn, forUpdate: true) else {
                throw HTTPError(.deviceNotFound, detail: "No such device.")
            }
            guard device.status == "ACTIVE" else { throw HTTPError(.deviceRevoked, detail: "The device was revoked.") }
            if let owner = device.username {
                guard UsernameRules.identical(owner, username) else {
                    throw HTTPError(.deviceBoundToOtherUser, detail: "The device is bound to another user.")
                }
                return device
            }
            device.username = username
            device.updatedAt = now
            try await DeviceStore.update(device, on: conn)
            try await Outbox.enqueue(device.changed("bound", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
            return device
        }
        ctx.logger.info("device bound", metadata: ["signet.device.id": .string(device.id)])
        return try .json(device.resource(inactiveAfter: inactiveAfter), headers: [("Cache-Control", "no-store")])
    }

    func unbind(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        let id = ctx.parameter("deviceId")
        let now = Date()
        try await context.withTransaction { conn in
            guard var device = try await DeviceStore.load(id, tenant: tenant, on: conn, forUpdate: true), let owner = device.username,
                UsernameRules.identical(owner, username)
            else { throw HTTPError(.deviceNotFound, detail: "No such device of this user.") }
            device.username = nil
            device.updatedAt = now
            try await DeviceStore.update(device, on: conn)
            try await Outbox.enqueue(device.changed("unbound", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
        }
        return HTTPResponse(status: 204)
    }

    /// The RP revokes a device (lost, stolen, compromised): it is unbound, its proofs are
    /// refused from then on, its push token is dropped, and creating it again answers
    /// `invalidDevice`. Revoking twice changes nothing.
    func revoke(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("deviceId")
        let now = Date()
        let device = try await context.withTransaction { conn -> StoredDevice in
            guard var device = try await DeviceStore.load(id, tenant: tenant, on: conn, forUpdate: true) else {
                throw HTTPError(.deviceNotFound, detail: "No such device.")
            }
            guard device.status == "ACTIVE" else { return device }
            device.status = "REVOKED"
            device.username = nil
            device.sealedPushToken = nil
            device.updatedAt = now
            try await DeviceStore.update(device, on: conn)
            try await Outbox.enqueue(device.changed("revoked", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
            return device
        }
        ctx.logger.info("device revoked", metadata: ["signet.device.id": .string(id)])
        return try .json(device.resource(inactiveAfter: inactiveAfter), headers: [("Cache-Control", "no-store")])
    }

    func load(_ id: String, tenant: String) async throws -> StoredDevice {
        guard let device = try await context.pool.withConnection({ try await DeviceStore.load(id, tenant: tenant, on: $0) }) else {
            throw HTTPError(.deviceNotFound, detail: "No such device.")
        }
        return device
    }
}
