import Foundation
import HTTPServer
import Schema
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// The oob service over a scratch database with tenant `acme`, and the calls a phone and an
/// RP make.
struct OOBFixture {
    static let key = "sk_harness_0123456789abcdefghijklmnopqrstuv"
    let h: ServiceHarness<OOBService>

    static func make(origins: [String] = ["http://localhost:8080"], environment: [String: String] = [:]) async throws -> OOBFixture {
        let h = try await ServiceHarness<OOBService>.withDatabase(
            environment: environment.merging(["SIGNET_OOB_KEY_SEAL": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]) { mine, _ in mine })
        try await h.seedTenant("acme", apiKey: key, origins: origins)
        return OOBFixture(h: h)
    }

    /// A call signed by `device` (its `Device-Proof` header over method, path and body).
    func device(_ device: SoftwareDevice, _ method: String, _ path: String, json: String? = nil) async throws -> HTTPResponse {
        let body = Array((json ?? "").utf8)
        let servicePath = String(path.prefix { $0 != "?" })
        return await h.send(method, path, headers: [("Device-Proof", try device.proof(method, servicePath, body: body))], json: json)
    }

    /// The service's queue worker for pushes and callbacks (a background service, which the
    /// harness does not run: a test runs it, or calls its passes).
    var deliveries: ApprovalDeliveryWorker {
        get throws { try #require(h.assembly.background.compactMap { $0 as? ApprovalDeliveryWorker }.first) }
    }

    /// Lets tenant `acme`'s RP give approvals' display text (app settings `allowDynamicText`).
    func allowDynamicText(_ allow: Bool = true) async throws {
        let r = await h.send(
            "PUT", "/v1/admin/tenants/acme/app-settings", bearer: ServiceHarness<OOBService>.adminToken,
            json: #"{"domains":[],"iosAppIds":[],"androidApps":[],"allowDynamicText":\#(allow)}"#)
        try #require((200..<300).contains(r.status), "\(String(decoding: r.body, as: UTF8.self))")
    }

    /// An RP call.
    func rp(_ method: String, _ path: String, json: String? = nil) async -> HTTPResponse {
        await h.send(method, path, bearer: Self.key, json: json)
    }

    /// Creates `device` and binds it to `username` by the RP: its id.
    func enrol(_ device: SoftwareDevice, as username: String, security: Bool = true) async throws -> String {
        let created = try await self.device(device, "POST", "/v1/tenants/acme/devices", json: try device.upsertBody(security: security))
        try #require(created.status == 201, "\(created.text)")
        let object = created.object()
        let token = try #require(object["deviceToken"] as? String)
        let bound = await rp("POST", "/v1/tenants/acme/users/\(username)/devices", json: #"{"deviceToken":"\#(token)"}"#)
        try #require(bound.status == 200, "\(bound.text)")
        return try #require(object["deviceId"] as? String)
    }
}

extension HTTPResponse {
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object; empty (which every check of a member then fails on) when it
    /// is not one.
    func object() -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The problem's `code`.
    var code: String? { object()["code"] as? String }
}
