import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// The oob-notification service's templates in process, over a scratch database.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct TemplateAdminTests {
    @Test func aTenantsTemplateIsStoredReadAndDeletedByTheAdmin() async throws {
        let h = try await ServiceHarness<OOBService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "sk_harness_0123456789abcdefghijklmnopqrstuv")
        let admin = ServiceHarness<OOBService>.adminToken
        let path = "/v1/admin/tenants/acme/templates/otp/de"
        let body = #"{"emailSubject":"Ihr Code","emailText":"Ihr Code ist {{code}}.","smsText":"Code: {{code}}"}"#
        let put = await h.send("PUT", path, bearer: admin, json: body)
        #expect((200..<300).contains(put.status), "\(String(decoding: put.body, as: UTF8.self))")
        let got = await h.send("GET", path, bearer: admin)
        #expect(got.status == 200 && String(decoding: got.body, as: UTF8.self).contains("Ihr Code"))
        #expect(await h.send("GET", path).status == 401)
        #expect(await h.send("DELETE", path, bearer: admin).status == 204)
        #expect(await h.send("GET", path, bearer: admin).status == 404)
    }
}
