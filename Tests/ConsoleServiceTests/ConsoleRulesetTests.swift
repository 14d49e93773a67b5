import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// Rulesets and the explain dry run through the console, over a fake authentication service.
@Suite struct ConsoleRulesetTests {
    static let ruleset = #"{"rules":[{"name":"passkey","action":"TRIGGER_AUTHENTICATION","sequences":[["fido2"]]}]}"#

    @Test func administratorsStoreViewersReadAndExplain() async throws {
        let (admin, cookie, csrf) = try await ConsoleFixture.signedIn("ada") { _ in FakeUpstream.json(#"{"version":1}"#) }
        let stored = await admin.send("PUT", "/console/api/tenants/acme/rulesets/authentication", json: Self.ruleset, cookie: cookie, csrf: csrf)
        #expect(stored.status == 200)
        #expect(admin.upstream.calls.last == UpstreamCall(
            service: .authentication, method: "PUT", path: "/v1/admin/tenants/acme/rulesets/authentication", credential: .admin, body: Self.ruleset))

        let trace = #"{"decision":{"matchedRule":"passkey"},"rules":[{"rule":"passkey","matched":true}]}"#
        let (viewer, vCookie, vCSRF) = try await ConsoleFixture.signedIn("vera") { _ in FakeUpstream.json(trace) }
        let refused = await viewer.send("PUT", "/console/api/tenants/acme/rulesets/authentication", json: Self.ruleset, cookie: vCookie, csrf: vCSRF)
        #expect(refused.status == 403 && refused.code == "console_role_insufficient")
        let read = await viewer.send("GET", "/console/api/tenants/acme/rulesets/registration", cookie: vCookie, csrf: nil)
        #expect(read.status == 200)
        let facts = #"{"facts":{"context":{"transactionAmount":5000}}}"#
        let explained = await viewer.send("POST", "/console/api/tenants/acme/rulesets/authentication/explain", json: facts, cookie: vCookie, csrf: vCSRF)
        #expect(explained.status == 200 && String(decoding: explained.body, as: UTF8.self) == trace)
        let noCSRF = await viewer.send("POST", "/console/api/tenants/acme/rulesets/authentication/explain", json: facts, cookie: vCookie, csrf: nil)
        #expect(noCSRF.code == "console_csrf_invalid")
        #expect(viewer.upstream.calls.dropFirst().map { "\($0.method) \($0.path)" } == [
            "GET /v1/admin/tenants/acme/rulesets/registration", "POST /v1/admin/tenants/acme/rulesets/authentication/explain",
        ])
    }

    @Test func anUnknownKindOrABodyThatIsNotJSONNeverReachesAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        let kind = await fixture.send("GET", "/console/api/tenants/acme/rulesets/payments", cookie: cookie, csrf: csrf)
        #expect(kind.status == 404)
        let broken = await fixture.send("PUT", "/console/api/tenants/acme/rulesets/authentication", json: #"{"rules": [}"#, cookie: cookie, csrf: csrf)
        #expect(broken.status == 400 && broken.code == "malformed_json")
        let duplicate = await fixture.send("PUT", "/console/api/tenants/acme/rulesets/authentication", json: #"{"rules":[],"rules":[]}"#, cookie: cookie, csrf: csrf)
        #expect(duplicate.status == 400 && duplicate.code == "malformed_json")
        #expect(fixture.upstream.calls.count == 1)
    }
}
