import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import QRCode
import Schema
import ServiceKit

/// TruCodes (#17): a login page pairs with the user's signed-in phone, so that its next step
/// needs no username typed.
///
/// - The page's RP asks for a code (`POST /v1/tenants/{t}/trucodes`) and shows its payload
///   (`<SIGNET_OOB_QR_APP_SCHEME>://trucode/<id>`, only the id: 128 random bits) as a QR code;
///   it polls `GET …/trucodes/{id}` (RP key) until `PAIRED`, with the paired user and device.
/// - The phone, a bound device with security enabled (as for QR sessions), scans it and pairs it
///   with its user (`POST …/devices/{d}/trucodes/{id}/pair`, `Device-Proof`), once, before it
///   expires; a code of another tenant is refused.
/// - The RP's next call names the code: `POST …/trucodes/{id}/approvals` creates an approval
///   (the approvals API's body without `username`/`deviceId`) for the paired device, and uses
///   the code up (`USED`); a refused approval request gives the code back (`PAIRED`).
struct TruCodeRoutes: Sendable {
    let context: ServiceContext
    let devices: DeviceStore
    let settings: QRSettings
    let approvals: ApprovalRoutes

    static let defaultLifetime = 120
    static let lifetimes = 30...600

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/trucodes", context.relyingParty) { request, ctx in try await create(request, ctx) }
        router.get("/v1/tenants/{tenant}/trucodes/{truCodeId}", context.relyingParty) { _, ctx in
            let code = try await load(ctx.parameter("truCodeId"), tenant: ctx.parameter("tenant"))
            return try .json(code.settled(now: Date()).resource, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/trucodes/{truCodeId}/approvals", context.relyingParty) { request, ctx in try await approval(request, ctx) }
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/trucodes/{truCodeId}/pair", context.deviceSigned(devices)) { _, ctx in
            try await pair(ctx)
        }
    }

    func create(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = request.body.isEmpty ? TruCodeCreateRequest() : try request.decode(TruCodeCreateRequest.self)
        let lifetime = body.expiresInSeconds ?? Self.defaultLifetime
        guard Self.lifetimes.contains(lifetime) else { throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds must be 30-600.") }
        guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound, detail: "No such tenant.") }
        let now = Date()
        let code = StoredTruCode(
            id: "tc_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenant, status: TruCodeStatus.pending, username: nil, deviceId: nil, createdAt: now,
            expiresAt: now.addingTimeInterval(Double(lifetime)), pairedAt: nil, updatedAt: now)
        let payload = "\(settings.appScheme)://trucode/\(code.id)"
        let image = try QRCode.encode(payload)
        try await context.pool.withConnection { try await code.insert(on: $0) }
        ctx.logger.info("trucode created", metadata: ["signet.trucode.id": .string(code.id)])
        let created = TruCodeCreated(truCodeId: code.id, payload: payload, qrCodePng: Data(image.pngData()).base64EncodedString(), expiresAt: code.expiresAt)
        return try .json(created, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// The phone pairs the code with its user, once.
    func pair(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("truCodeId")
        let now = Date()
        let paired = try await context.withTransaction { conn -> StoredTruCode in
            guard var code = try await StoredTruCode.load(id, on: conn, forUpdate: true) else {
                throw HTTPError(.truCodeNotFound, detail: "No such TruCode.")
            }
            guard code.tenant == tenant else { throw HTTPError(.truCodeOtherTenant, detail: "This code belongs to another tenant.") }
            let owner = try await QRSessionRoutes.boundUser(deviceId, tenant: tenant, on: conn)
            code = code.settled(now: now)
            guard code.status != TruCodeStatus.expired else { throw HTTPError(.truCodeExpired, detail: "The code expired.") }
            guard code.status == TruCodeStatus.pending else { throw HTTPError(.truCodeAlreadyUsed, detail: "The code was used already.") }
            code.status = TruCodeStatus.paired
            code.username = owner
            code.deviceId = deviceId
            code.pairedAt = now
            code.updatedAt = now
            try await code.update(on: conn)
            return code
        }
        ctx.logger.info("trucode paired", metadata: ["signet.trucode.id": .string(id)])
        // The phone learns the outcome; the page's RP reads who.
        var view = paired.resource
        view.username = nil
        return try .json(view, headers: [("Cache-Control", "no-store")])
    }

    /// An approval for the paired user's device: the approvals API's body without `username`
    /// or `deviceId`, which the code supplies.
    func approval(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("truCodeId")
        guard case .object(var members) = try request.decode(JSONValue.self) else { throw HTTPError.invalid("$", "The body is the approval request.") }
        guard members["username"] == nil, members["deviceId"] == nil else {
            throw HTTPError.invalid("username", "The TruCode names the user: no username or deviceId.")
        }
        let now = Date()
        let used = try await context.withTransaction { conn -> StoredTruCode in
            guard var code = try await StoredTruCode.load(id, on: conn, forUpdate: true), code.tenant == tenant else {
                throw HTTPError(.truCodeNotFound, detail: "No such TruCode.")
            }
            code = code.settled(now: now)
            switch code.status {
            case TruCodeStatus.expired: throw HTTPError(.truCodeExpired, detail: "The code expired.")
            case TruCodeStatus.pending: throw HTTPError(.truCodeNotPaired, detail: "No phone has paired the code yet.")
            case TruCodeStatus.used: throw HTTPError(.truCodeAlreadyUsed, detail: "The code was used already.")
            default: break
            }
            code.status = TruCodeStatus.used
            code.updatedAt = now
            try await code.update(on: conn)
            return code
        }
        members["deviceId"] = .string(used.deviceId ?? "")
        var forwarded = request
        forwarded.body = try JSONValueEncoder().encodeToBytes(JSONValue.object(members))
        do {
            return try await approvals.create(forwarded, ctx, internalCaller: false)
        } catch {
            // A refused request (a bad field, the device gone) gives the code back.
            try? await context.withTransaction { conn in
                guard var code = try await StoredTruCode.load(id, on: conn, forUpdate: true), code.status == TruCodeStatus.used else { return }
                code.status = TruCodeStatus.paired
                code.updatedAt = Date()
                try await code.update(on: conn)
            }
            throw error
        }
    }

    func load(_ id: String, tenant: String) async throws -> StoredTruCode {
        guard let code = try await context.pool.withConnection({ try await StoredTruCode.load(id, on: $0) }), code.tenant == tenant else {
            throw HTTPError(.truCodeNotFound, detail: "No such TruCode.")
        }
        return code
    }
}
