import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// A tenant's users through the console: the console's own key of the tenant, imported once,
/// then the RP API's credential routes.
@Suite struct ConsoleUserTests {
    static let secret = ConsoleService.developmentOperatorsKey

    @Test func theConsolesTenantKeyIsDerivedImportedOnceAndUsed() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto") { call in
            call.method == "PATCH" ? FakeUpstream.json(#"{"credentialId":"Y3JlZA","status":"suspended"}"#) : FakeUpstream.json(#"{"credentials":[]}"#)
        }
        let list = await fixture.send("GET", "/console/api/tenants/acme/users/alice/credentials", cookie: cookie, csrf: nil)
        #expect(list.status == 200)
        let suspend = await fixture.send(
            "PATCH", "/console/api/tenants/acme/users/alice/credentials/Y3JlZA", json: #"{"status":"suspended"}"#, cookie: cookie, csrf: csrf)
        #expect(suspend.status == 200)
        let keyID = ConsoleTenantKeys.keyID(for: "acme", secret: Self.secret)
        #expect(keyID.count == 18 && keyID.hasPrefix("k_"))
        #expect(fixture.upstream.calls.dropFirst().map { "\($0.method) \($0.path) \($0.credential)" } == [
            "PUT /v1/admin/tenants/acme/api-keys/\(keyID) admin",
            "GET /v1/tenants/acme/users/alice/credentials tenantRelyingParty(\"acme\")",
            "PATCH /v1/tenants/acme/users/alice/credentials/Y3JlZA tenantRelyingParty(\"acme\")",
        ])
        #expect(fixture.upstream.calls[1].body == #"{"apiKey":"\#(ConsoleTenantKeys.key(for: "acme", secret: Self.secret))"}"#)
        #expect(fixture.upstream.calls.last?.body == #"{"status":"suspended"}"#)
    }

    @Test func keysDifferByTenantAndSecret() {
        let a = ConsoleTenantKeys.key(for: "acme", secret: Self.secret)
        #expect(a != ConsoleTenantKeys.key(for: "acmf", secret: Self.secret))
        #expect(a != ConsoleTenantKeys.key(for: "acme", secret: Self.secret + "x"))
        #expect(a == ConsoleTenantKeys.key(for: "acme", secret: Self.secret))
        #expect(a.utf8.count >= 32 && a.utf8.count <= 256)
    }

    @Test func viewersReadButDoNotSuspend() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("vera") { _ in FakeUpstream.json(#"{"credentials":[]}"#) }
        #expect(await fixture.send("GET", "/console/api/tenants/acme/users/alice/credentials", cookie: cookie, csrf: nil).status == 200)
        let refused = await fixture.send(
            "PATCH", "/console/api/tenants/acme/users/alice/credentials/Y3JlZA", json: #"{"status":"suspended"}"#, cookie: cookie, csrf: csrf)
        #expect(refused.status == 403 && refused.code == "console_role_insufficient")
        #expect(!fixture.upstream.calls.contains { $0.method == "PATCH" })
    }

    @Test func badInputNeverReachesAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        let base = "/console/api/tenants/acme/users"
        let deleted = await fixture.send("PATCH", "\(base)/alice/credentials/Y3JlZA", json: #"{"status":"deleted"}"#, cookie: cookie, csrf: csrf)
        #expect(deleted.status == 400 && deleted.code == "invalid_field")
        let rename = await fixture.send("PATCH", "\(base)/alice/credentials/Y3JlZA", json: #"{"friendlyName":"x"}"#, cookie: cookie, csrf: csrf)
        #expect(rename.status == 400 && rename.code == "invalid_field")
        let badID = await fixture.send("PATCH", "\(base)/alice/credentials/a%3Fb", json: #"{"status":"active"}"#, cookie: cookie, csrf: csrf)
        #expect(badID.status == 400 && badID.code == "invalid_field")
        let badName = await fixture.send("GET", "\(base)/%20alice/credentials", cookie: cookie, csrf: csrf)
        #expect(badName.status == 400 && badName.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 1)
    }

    /// A username is passed on percent-encoded: it stays one path segment of the service's URL.
    @Test func usernamesArePercentEncoded() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("ada") { _ in FakeUpstream.json(#"{"credentials":[]}"#) }
        _ = await fixture.send("GET", "/console/api/tenants/acme/users/jos%C3%A9%3Fx=1%23y/credentials", cookie: cookie, csrf: nil)
        #expect(fixture.upstream.calls.last?.path == "/v1/tenants/acme/users/jos%C3%A9%3Fx%3D1%23y/credentials")
    }
}
