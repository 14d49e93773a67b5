import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// The authentication service in process, over a scratch database.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct SettingsAndSignInTests {
    @Test func settingsChangeIsPublishedAndItsSecretNeverAnswered() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "sk_harness_0123456789abcdefghijklmnopqrstuv")
        let admin = ServiceHarness<AuthenticationService>.adminToken
        let put = await h.send(
            "PUT", "/v1/admin/tenants/acme/authentication-settings", bearer: admin,
            json: #"{"lockAfterFailures": 4, "probationAfterFailures": 2, "externalPassword": {"verifyURL": "https://rp.example/check", "bearerToken": "rp-secret-token"}}"#)
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        let got = await h.send("GET", "/v1/admin/tenants/acme/authentication-settings", bearer: admin)
        let text = String(decoding: got.body, as: UTF8.self)
        #expect(got.status == 200 && text.contains("\"lockAfterFailures\":4") && !text.contains("rp-secret-token"), "\(text)")
        let events = try await h.published()
        #expect(events.map(\.type).contains(AuthenticationPolicyChanged.eventType))
        #expect(events.allSatisfy { !$0.data.contains("rp-secret-token") })
    }

    /// A document read by GET and sent back unchanged keeps the stored token; a new verify URL
    /// with the redaction is refused (the token would go to a URL it was not given for).
    @Test func theRedactedTokenSentBackKeepsTheStoredOneForTheSameURLOnly() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "sk_harness_0123456789abcdefghijklmnopqrstuv")
        let admin = ServiceHarness<AuthenticationService>.adminToken
        let path = "/v1/admin/tenants/acme/authentication-settings"
        func stored() async throws -> String {
            try await h.context.pool.withConnection { conn in
                try await conn.query("SELECT document FROM authentication_settings WHERE tenant_id = 'acme'").first?.string("document") ?? ""
            }
        }
        let put = await h.send(
            "PUT", path, bearer: admin,
            json: #"{"externalPassword": {"verifyURL": "https://rp.example/check", "bearerToken": "rp-secret-token"}}"#)
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        // GET, change one number, PUT the document back as it came.
        let got = await h.send("GET", path, bearer: admin)
        let document = String(decoding: got.body, as: UTF8.self)
        #expect(document.contains(#""bearerToken":"***""#), "\(document)")
        let again = await h.send("PUT", path, bearer: admin, json: document.replacing(try Regex(#""lockAfterFailures":[0-9]+"#), with: #""lockAfterFailures":7"#))
        #expect(again.status == 200, "\(String(decoding: again.body, as: UTF8.self))")
        var row = try await stored()
        #expect(row.contains("rp-secret-token") && !row.contains("***") && row.contains("\"lockAfterFailures\":7"), "\(row)")
        // The redaction with another URL: refused, nothing stored.
        let moved = await h.send(
            "PUT", path, bearer: admin, json: #"{"externalPassword": {"verifyURL": "https://elsewhere.example/check", "bearerToken": "***"}}"#)
        let problem = String(decoding: moved.body, as: UTF8.self)
        #expect(moved.status == 400 && problem.contains("invalid_field") && problem.contains("externalPassword.bearerToken"), "\(problem)")
        row = try await stored()
        #expect(row.contains("https://rp.example/check") && row.contains("rp-secret-token"), "\(row)")
        // With no token stored, the redaction stands for nothing: refused too.
        let cleared = await h.send("PUT", path, bearer: admin, json: #"{"externalPassword": {"verifyURL": "https://rp.example/check"}}"#)
        #expect(cleared.status == 200)
        let empty = await h.send(
            "PUT", path, bearer: admin, json: #"{"externalPassword": {"verifyURL": "https://rp.example/check", "bearerToken": "***"}}"#)
        #expect(empty.status == 400)
    }

    @Test func aSignInForAnUnknownUserFindsNoSequence() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "sk_harness_0123456789abcdefghijklmnopqrstuv")
        let started = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"username":"nobody"}"#)
        let json = try JSONSerialization.jsonObject(with: Data(started.body)) as? [String: Any]
        #expect(started.status == 201 && json?["status"] as? String == "FAILED", "\(String(decoding: started.body, as: UTF8.self))")
        // A non-NFC username never reaches the flow.
        let refused = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"username":"jose\u0301"}"#)
        #expect(refused.status == 400)
    }
}

/// The tenant's switch for quick authentication.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct QuickAuthSwitchTests {
    @Test func quickAuthenticationSwitchedOffIsRefusedBeforeAnyCheck() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "sk_harness_0123456789abcdefghijklmnopqrstuv")
        let admin = ServiceHarness<AuthenticationService>.adminToken
        let body = #"""
            {"time": \#(Int(Date().timeIntervalSince1970)), "credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key",
             "response": {"clientDataJSON": "AAAA", "authenticatorData": "AAAA", "signature": "AAAA"}}}
            """#
        // On (the default): the request reaches the checks (an unknown credential).
        let on = await h.send("POST", "/v1/tenants/acme/signins/quick", json: body)
        #expect(on.status == 400, "\(String(decoding: on.body, as: UTF8.self))")
        let put = await h.send("PUT", "/v1/admin/tenants/acme/authentication-settings", bearer: admin, json: #"{"quickAuthEnabled": false}"#)
        #expect(put.status == 200 && String(decoding: put.body, as: UTF8.self).contains(#""quickAuthEnabled":false"#))
        let off = await h.send("POST", "/v1/tenants/acme/signins/quick", json: body)
        let json = try JSONSerialization.jsonObject(with: Data(off.body)) as? [String: Any]
        #expect(off.status == 403 && json?["code"] as? String == "quick_auth_disabled", "\(String(decoding: off.body, as: UTF8.self))")
    }
}
