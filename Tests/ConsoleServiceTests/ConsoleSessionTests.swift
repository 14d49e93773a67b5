import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// Sign-in, the session cookie, CSRF, origin and roles, in process over a fake upstream.
@Suite struct ConsoleSessionTests {
    @Test func signInSetsAStrictHttpOnlyCookieAndReturnsTheCSRFToken() async throws {
        let serviceToken = ConsoleFixture.sessionToken("ada", amr: ["hwk", "user", "mfa"])
        let upstream = FakeUpstream { call in FakeUpstream.json(ConsoleFixture.signedInAnswer("ada")) }
        let fixture = try ConsoleFixture(upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h1","credential":{"id":"x"}}"#)
        #expect(response.status == 200)
        let cookie = try #require(response.header("Set-Cookie"))
        #expect(cookie.hasPrefix("signet_console="))
        #expect(cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict") && cookie.contains("; Path=/console/"))
        #expect(!cookie.contains("Secure"), "served over http://localhost")
        let body = try JSONParser.parse(response.body)
        #expect(body["username"]?.stringValue == "ada" && body["role"]?.stringValue == "administrator")
        #expect((body["csrfToken"]?.stringValue?.count ?? 0) >= 43)
        // The service's own session token never reaches the browser.
        #expect(!String(decoding: response.body, as: UTF8.self).contains(serviceToken))
        #expect(response.header("Set-Cookie")?.contains(serviceToken) == false)
        #expect(response.header("Cache-Control") == "no-store")
        #expect(upstream.calls == [
            UpstreamCall(
                service: .authentication, method: "POST", path: "/v1/tenants/operators/webauthn/authentications", credential: .none,
                body: #"{"credential":{"id":"x"},"handle":"h1"}"#)
        ])
    }

    @Test func overTLSTheCookieIsSecure() async throws {
        let (_, _, _) = try await ConsoleFixture.signedIn("ada", environment: ["SIGNET_CONSOLE_ORIGIN": "https://console.example"])
        let upstream = FakeUpstream { _ in FakeUpstream.json(ConsoleFixture.signedInAnswer("ada")) }
        let fixture = try ConsoleFixture(environment: ["SIGNET_CONSOLE_ORIGIN": "https://console.example"], upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h","credential":{}}"#)
        #expect(response.header("Set-Cookie")?.hasSuffix("; Secure") == true)
    }

    @Test func aUserOfTheTenantWithoutARoleGetsNoSession() async throws {
        let upstream = FakeUpstream { _ in FakeUpstream.json(ConsoleFixture.signedInAnswer("mallory")) }
        let fixture = try ConsoleFixture(upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h","credential":{}}"#)
        #expect(response.status == 403 && response.code == "console_not_an_operator")
        #expect(response.header("Set-Cookie") == nil)
    }

    /// An assertion without user verification (a stolen security key without its PIN, the
    /// handle from the authentication service's public options asked with
    /// `userVerification: "discouraged"`): the service signs the user in with `amr`
    /// `["hwk","user"]`, and the console opens no session, for an administrator either. A token
    /// that is no JWT, or has no `amr`, counts as no user verification.
    @Test(arguments: [
        ConsoleFixture.signedInAnswer("ada", amr: ["hwk", "user"]),
        ConsoleFixture.signedInAnswer("ada", amr: []),
        #"{"sessionToken":"service-token","username":"ada","credentialId":"c","expiresAt":"2030-01-01T00:00:00Z"}"#,
    ])
    func aSignInWithoutUserVerificationGetsNoSession(_ answer: String) async throws {
        let upstream = FakeUpstream { _ in FakeUpstream.json(answer) }
        let fixture = try ConsoleFixture(upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h","credential":{}}"#)
        #expect(response.status == 403 && response.code == "console_user_verification_required")
        #expect(response.header("Set-Cookie") == nil)
    }

    @Test func aRefusedAssertionIsPassedOnWithTheServicesCode() async throws {
        let upstream = FakeUpstream { _ in FakeUpstream.json(#"{"type":"x","title":"Bad","status":400,"code":"signature_invalid"}"#, status: 400) }
        let fixture = try ConsoleFixture(upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h","credential":{}}"#)
        #expect(response.status == 400 && response.code == "signature_invalid")
        #expect(response.header("Set-Cookie") == nil)
    }

    @Test func theSessionIsReadBackAndSignOutEndsIt() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("vera")
        let session = await fixture.send("GET", "/console/api/session", cookie: cookie, csrf: nil)
        #expect(session.status == 200)
        #expect(try JSONParser.parse(session.body)["csrfToken"]?.stringValue == csrf)
        #expect(await fixture.send("POST", "/console/api/sign-out", cookie: cookie, csrf: "forged").code == "console_csrf_invalid")
        let out = await fixture.send("POST", "/console/api/sign-out", cookie: cookie, csrf: csrf)
        #expect(out.status == 204 && out.header("Set-Cookie")?.contains("Max-Age=0") == true)
        let after = await fixture.send("GET", "/console/api/session", cookie: cookie, csrf: nil)
        #expect(after.status == 401 && after.code == "console_session_required")
    }

    @Test func stateChangingCallsNeedTheSessionsCSRFToken() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        let body = #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#
        let missing = await fixture.send("PUT", "/console/api/tenants/acme", json: body, cookie: cookie, csrf: nil)
        #expect(missing.status == 403 && missing.code == "console_csrf_invalid")
        let forged = await fixture.send("PUT", "/console/api/tenants/acme", json: body, cookie: cookie, csrf: String(csrf.reversed()))
        #expect(forged.status == 403 && forged.code == "console_csrf_invalid")
        // Another session's token is as good as a forged one.
        let (_, _, otherCSRF) = try await ConsoleFixture.signedIn("ada")
        #expect(await fixture.send("PUT", "/console/api/tenants/acme", json: body, cookie: cookie, csrf: otherCSRF).code == "console_csrf_invalid")
        let foreign = await fixture.send("PUT", "/console/api/tenants/acme", json: body, cookie: cookie, csrf: csrf, origin: "https://evil.example")
        #expect(foreign.status == 403 && foreign.code == "console_origin_refused")
        // Only the sign-in call reached a service.
        #expect(fixture.upstream.calls.count == 1)
        let good = await fixture.send("PUT", "/console/api/tenants/acme", json: body, cookie: cookie, csrf: csrf, origin: ConsoleFixture.origin)
        #expect(good.status == 200)
        #expect(fixture.upstream.calls.last == UpstreamCall(service: .registration, method: "PUT", path: "/v1/admin/tenants/acme", credential: .admin, body: #"{"displayName":"ACME","origins":["https://acme.example"],"rpId":"acme.example"}"#))
    }

    @Test func aForgedCookieIsNoSession() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        // The last character changed (to one it is not: appending "A" to a cookie ending in "A"
        // would send the real cookie back, one run in 64).
        let forged = String(cookie.dropLast()) + (cookie.last == "A" ? "B" : "A")
        #expect(forged != cookie)
        let response = await fixture.send("GET", "/console/api/tenants/acme", cookie: forged, csrf: csrf)
        #expect(response.status == 401 && response.code == "console_session_required")
    }

    @Test(arguments: ["vera", "otto"])
    func onlyAdministratorsChangeTenantsAndKeys(_ username: String) async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn(username)
        let calls = [
            ("PUT", "/console/api/tenants/acme", #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#),
            ("POST", "/console/api/tenants/acme/api-keys", nil), ("POST", "/console/api/tenants/acme/api-keys/k_0123456789abcdef/rotate", nil),
            ("DELETE", "/console/api/tenants/acme/api-keys/k_0123456789abcdef", nil),
        ]
        for (method, path, body) in calls {
            let response = await fixture.send(method, path, json: body, cookie: cookie, csrf: csrf)
            #expect(response.status == 403 && response.code == "console_role_insufficient", "\(method) \(path)")
        }
        #expect(fixture.upstream.calls.count == 1, "nothing but the sign-in reached a service")
        // Reading is every role's.
        #expect(await fixture.send("GET", "/console/api/tenants/acme", cookie: cookie, csrf: nil).status == 200)
        #expect(fixture.upstream.calls.last == UpstreamCall(service: .registration, method: "GET", path: "/v1/tenants/acme", credential: .none, body: nil))
    }

    @Test func sessionsEndWhenIdleOrTooOld() async throws {
        let sessions = OperatorSessions(idleTimeout: .seconds(60), lifetime: .seconds(300))
        let start = ContinuousClock.now
        let (idle, _) = try #require(await sessions.open(username: "ada", role: .administrator, credentialID: "c", userHandle: nil, now: start))
        #expect(await sessions.find(token: idle, now: start + .seconds(59)) != nil)
        #expect(await sessions.find(token: idle, now: start + .seconds(119)) == nil)
        let (old, _) = try #require(await sessions.open(username: "ada", role: .administrator, credentialID: "c", userHandle: nil, now: start))
        for minute in 1...4 { #expect(await sessions.find(token: old, now: start + .seconds(minute * 59)) != nil) }
        #expect(await sessions.find(token: old, now: start + .seconds(300)) == nil)
    }
}
