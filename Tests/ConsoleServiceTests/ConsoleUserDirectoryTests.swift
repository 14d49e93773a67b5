import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// Finding users and acting on one through the console: the search (admin API), a user's
/// methods and devices (viewer), the data-rights fetch, the erasure and its receipt and
/// session revocation (operator), each with the console's own key of the tenant.
@Suite struct ConsoleUserDirectoryTests {
    static let secret = ConsoleService.developmentOperatorsKey
    static let erasure = "er_0123456789abcdef0123456789abcdef"
    static let tenantKey = UpstreamCredential.tenantRelyingParty("acme")

    /// (method, console path, least role, service, service path, credential)
    static let routes: [(String, String, OperatorRole, ServiceName, String, UpstreamCredential)] = [
        ("GET", "/console/api/tenants/acme/users?prefix=al", .viewer, .registration, "/v1/admin/tenants/acme/users?prefix=al&limit=25", .admin),
        ("GET", "/console/api/tenants/acme/users/alice/methods", .viewer, .registration, "/v1/tenants/acme/users/alice/methods", tenantKey),
        ("GET", "/console/api/tenants/acme/users/alice/devices", .viewer, .oob, "/v1/tenants/acme/users/alice/devices", tenantKey),
        ("GET", "/console/api/tenants/acme/users/alice/data", .operator, .registration, "/v1/tenants/acme/users/alice/data", tenantKey),
        ("DELETE", "/console/api/tenants/acme/users/alice", .operator, .registration, "/v1/tenants/acme/users/alice", tenantKey),
        ("GET", "/console/api/tenants/acme/erasures/\(erasure)", .operator, .registration, "/v1/tenants/acme/erasures/\(erasure)", tenantKey),
        ("DELETE", "/console/api/tenants/acme/sessions/c2lkLXNpZA", .operator, .authentication, "/v1/tenants/acme/sessions/c2lkLXNpZA", tenantKey),
    ]

    @Test(arguments: [("vera", OperatorRole.viewer), ("otto", .operator), ("ada", .administrator)])
    func eachRouteForwardsForItsRolesOnly(_ username: String, _ role: OperatorRole) async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn(username)
        for (method, path, least, service, servicePath, credential) in Self.routes {
            let before = fixture.upstream.calls.count
            let response = await fixture.send(method, path, cookie: cookie, csrf: csrf)
            if role >= least {
                #expect(response.status == 200, "\(username) \(method) \(path)")
                let call = try #require(fixture.upstream.calls.last)
                #expect(call == UpstreamCall(service: service, method: method, path: servicePath, credential: credential, body: nil))
            } else {
                #expect(response.status == 403 && response.code == "console_role_insufficient", "\(username) \(method) \(path)")
                #expect(fixture.upstream.calls.count == before)
            }
        }
        // The console's key of the tenant was imported once, before its first use.
        let imports = fixture.upstream.calls.filter { $0.method == "PUT" && $0.path.hasPrefix("/v1/admin/tenants/acme/api-keys/") }
        #expect(imports.count == 1)
    }

    /// The search's parameters are checked and percent-encoded: they stay parameters of the
    /// service's URL.
    @Test func searchParametersAreCheckedAndEncoded() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera")
        _ = await fixture.send("GET", "/console/api/tenants/acme/users?prefix=jos%C3%A9%26limit%3D100&after=a%2Fb", cookie: cookie, csrf: nil)
        #expect(fixture.upstream.calls.last?.path == "/v1/admin/tenants/acme/users?prefix=jos%C3%A9%26limit%3D100&after=a%2Fb&limit=25")
        let control = await fixture.send("GET", "/console/api/tenants/acme/users?prefix=a%0Ab", cookie: cookie, csrf: nil)
        #expect(control.status == 400 && control.code == "invalid_field")
        let long = await fixture.send("GET", "/console/api/tenants/acme/users?after=" + String(repeating: "a", count: 257), cookie: cookie, csrf: nil)
        #expect(long.status == 400 && long.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 2)
    }

    @Test func badIdsNeverReachAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto")
        for path in [
            "/console/api/tenants/acme/erasures/er_0123", "/console/api/tenants/acme/erasures/er_0123456789ABCDEF0123456789abcdef",
            "/console/api/tenants/acme/erasures/xx_0123456789abcdef0123456789abcdef",
        ] {
            let response = await fixture.send("GET", path, cookie: cookie, csrf: nil)
            #expect(response.status == 400 && response.code == "invalid_field", "\(path)")
        }
        for sid in ["a%3Fb", "a.b", String(repeating: "a", count: 65)] {
            let response = await fixture.send("DELETE", "/console/api/tenants/acme/sessions/\(sid)", cookie: cookie, csrf: csrf)
            #expect(response.status == 400 && response.code == "invalid_field", "\(sid)")
        }
        let user = await fixture.send("DELETE", "/console/api/tenants/acme/users/%20alice", cookie: cookie, csrf: csrf)
        #expect(user.status == 400 && user.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 1)
    }

    /// Deleting a user is state-changing: without the CSRF token nothing is erased.
    @Test func anErasureNeedsTheCSRFToken() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("otto")
        let response = await fixture.send("DELETE", "/console/api/tenants/acme/users/alice", cookie: cookie, csrf: nil)
        #expect(response.status == 403 && response.code == "console_csrf_invalid")
        #expect(!fixture.upstream.calls.contains { $0.method == "DELETE" })
    }

    /// The erasure's answer (202 with its id) and the service's problems come back as they are.
    @Test func theErasureAndItsReceiptArePassedOn() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto") { call in
            switch (call.method, call.path) {
            case ("DELETE", _): FakeUpstream.json(#"{"erasureId":"\#(Self.erasure)"}"#, status: 202)
            case ("GET", let path) where path.contains("/erasures/"):
                FakeUpstream.json(#"{"erasureId":"\#(Self.erasure)","status":"COMPLETED","parts":[],"receipt":"eyJ.x.y"}"#)
            case ("GET", let path) where path.hasSuffix("/data"):
                FakeUpstream.json(#"{"type":"about:blank","title":"Not found","status":404,"code":"tenant_not_found"}"#, status: 404)
            default: FakeUpstream.json("{}")
            }
        }
        let erase = await fixture.send("DELETE", "/console/api/tenants/acme/users/alice", cookie: cookie, csrf: csrf)
        #expect(erase.status == 202)
        #expect(try JSONParser.parse(erase.body)["erasureId"]?.stringValue == Self.erasure)
        let status = await fixture.send("GET", "/console/api/tenants/acme/erasures/\(Self.erasure)", cookie: cookie, csrf: nil)
        #expect(status.status == 200)
        #expect(try JSONParser.parse(status.body)["receipt"]?.stringValue == "eyJ.x.y")
        let data = await fixture.send("GET", "/console/api/tenants/acme/users/alice/data", cookie: cookie, csrf: nil)
        #expect(data.status == 404 && data.code == "tenant_not_found")
    }
}
