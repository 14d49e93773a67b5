import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// `checkRegPossible` / `checkAuthPossible` (#17): a device asks whether it can register or
/// sign in by QR code (`GET /v1/tenants/{tenant}/devices/{deviceId}/qr-capabilities`, signed by
/// the device). The conditions are those the claim enforces (bound, active, security enabled)
/// and the tenant's `qrPurposes`, which creation enforces; the answer names every one unmet.
extension QRSessionRoutes {
    func capabilities(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        guard let device = try await context.pool.withConnection({ try await DeviceStore.load(ctx.parameter("deviceId"), tenant: tenant, on: $0) })
        else { throw HTTPError(.deviceNotFound, detail: "No such device.") }
        let settings = try await apps.get(tenant: tenant)
        var reasons: [String] = []
        if device.username == nil { reasons.append("device_not_bound") }
        if device.status != "ACTIVE" || !device.resource(inactiveAfter: inactiveAfter).active { reasons.append("device_inactive") }
        if !device.securityEnabled { reasons.append("security_disabled") }
        let deviceReady = reasons.isEmpty
        let register = settings?.allowsQR(QRSessionPurpose.register) ?? true
        let authenticate = settings?.allowsQR(QRSessionPurpose.authenticate) ?? true
        if !register { reasons.append("register_not_allowed") }
        if !authenticate { reasons.append("authenticate_not_allowed") }
        let answer = QRCapabilities(registerPossible: deviceReady && register, authenticatePossible: deviceReady && authenticate, reasons: reasons)
        return try .json(answer, headers: [("Cache-Control", "no-store")])
    }
}
