import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// Tenants and API keys through the console, as an administrator, over a fake registration
/// service.
@Suite struct ConsoleTenantTests {
    static let issued = #"{"keyId":"k_00000000000000aa","apiKey":"sk_new_secret","createdAt":"2030-01-01T00:00:00Z"}"#

    @Test func createShowsTheKeyOnceAndRotateIssuesThenRevokes() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada") { call in
            call.method == "DELETE" ? UpstreamResponse(status: 204, contentType: nil, body: []) : FakeUpstream.json(Self.issued, status: 201)
        }
        let created = await fixture.send("POST", "/console/api/tenants/acme/api-keys", cookie: cookie, csrf: csrf)
        #expect(created.status == 201 && created.header("Cache-Control") == "no-store")
        #expect(try JSONParser.parse(created.body)["apiKey"]?.stringValue == "sk_new_secret")
        let rotated = await fixture.send("POST", "/console/api/tenants/acme/api-keys/k_0123456789abcdef/rotate", cookie: cookie, csrf: csrf)
        #expect(rotated.status == 201)
        let body = try JSONParser.parse(rotated.body)
        #expect(body["keyId"]?.stringValue == "k_00000000000000aa" && body["revokedKeyId"]?.stringValue == "k_0123456789abcdef")
        let revoked = await fixture.send("DELETE", "/console/api/tenants/acme/api-keys/k_0123456789abcdef", cookie: cookie, csrf: csrf)
        #expect(revoked.status == 204)
        #expect(fixture.upstream.calls.dropFirst().map { "\($0.method) \($0.path) \($0.credential)" } == [
            "POST /v1/admin/tenants/acme/api-keys admin",
            "POST /v1/admin/tenants/acme/api-keys admin", "DELETE /v1/admin/tenants/acme/api-keys/k_0123456789abcdef admin",
            "DELETE /v1/admin/tenants/acme/api-keys/k_0123456789abcdef admin",
        ])
    }

    @Test func aKeyIdThatIsNotOneNeverReachesAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        for bad in ["k_0123", "..", "k_0123456789ABCDEF%2F..", "k_0123456789abcdef%3Fx=1"] {
            let response = await fixture.send("DELETE", "/console/api/tenants/acme/api-keys/\(bad)", cookie: cookie, csrf: csrf)
            #expect(response.status == 400, "\(bad)")
        }
        #expect(fixture.upstream.calls.count == 1)
    }

    @Test func aTenantIdThatIsNotOneNeverReachesAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        let response = await fixture.send("GET", "/console/api/tenants/ACME%3F", cookie: cookie, csrf: csrf)
        #expect(response.status == 400 && response.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 1)
    }

    @Test func aServicesRefusalComesBackWithItsCode() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada") { _ in
            FakeUpstream.json(#"{"type":"x","title":"Invalid field","status":400,"code":"invalid_field","field":"rpId"}"#, status: 400)
        }
        let response = await fixture.send(
            "PUT", "/console/api/tenants/acme", json: #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#,
            cookie: cookie, csrf: csrf)
        #expect(response.status == 400 && response.code == "invalid_field")
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test func thePageIsServedWithAStrictContentSecurityPolicy() async throws {
        let fixture = try ConsoleFixture()
        for path in ["/console/", "/console/console.js", "/console/webauthn-json.js", "/console/console.css", "/console/api/session"] {
            let response = await fixture.send("GET", path)
            let csp = try #require(response.header("Content-Security-Policy"), "\(path)")
            #expect(csp.contains("default-src 'none'") && csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"))
            #expect(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"))
            #expect(response.header("X-Content-Type-Options") == "nosniff")
        }
        let page = await fixture.send("GET", "/console/")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        // No inline script or style in the page: the policy would block them.
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains("style=") && !html.contains("onclick"))
    }
}
