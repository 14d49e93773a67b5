import Foundation
import Schema
import Testing
import TestSupport

/// Where the QR suites start (``QRRegistrationStackTests``, ``DeviceBlessingStackTests``): a new
/// tenant whose oob service holds its signing key, a user, and a software phone enrolled and
/// bound to that user; and a device scanning a code.
struct BoundPhone {
    let tenant: AdaptiveSignInStackTests.Tenant
    let username: String
    let phone: SoftwareDevice
    let device: String

    /// Requires the stack (fails loudly under CI without it). The user is `<prefix>-<random>`,
    /// the phone of `platform` (its app `com.example.bank`).
    static func make(_ prefix: String, platform: String) async throws -> BoundPhone {
        try TestStack.require()
        let t = try await AdaptiveSignInStackTests().tenant()
        await OOBApprovalStackTests().waitForOOBKey(t)
        let username = "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: platform)
        let device = try await OOBApprovalStackTests.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        return BoundPhone(tenant: t, username: username, phone: phone, device: device)
    }

    /// `phone` (its device `device` of tenant `t`) scans a code: the claim of the QR session its
    /// payload names.
    static func scan(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, payload: String) async throws -> TestHTTP.Response {
        let id = try #require(QRPayloadType.sessionId(in: payload))
        return try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(id)/claim", json: "{}")
    }
}
