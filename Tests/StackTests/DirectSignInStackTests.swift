import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport

/// The direct sign-in routes (one assertion → a session, `…/webauthn/authentications` and
/// `…/uaf/authentications`) against the tenant's authentication rules and the user's standing,
/// and quick authentication's failures counted towards that standing.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct DirectSignInStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    let adaptive = AdaptiveSignInStackTests()

    /// Options of the direct WebAuthn route (nil username: usernameless).
    func options(_ t: Adaptive.Tenant, _ username: String?) async throws -> TestHTTP.Response {
        try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/webauthn/authentications/options", headers: ["Content-Type": "application/json"],
            body: try Adaptive.json(AuthenticationOptionsRequest(username: username)))
    }

    /// The finish call of the direct WebAuthn route for `options` (a 200 answer of ``options(_:_:)``).
    func finish(_ t: Adaptive.Tenant, _ options: TestHTTP.Response, with authenticator: SoftAuthenticator, origin: String = Adaptive.origin)
        async throws -> TestHTTP.Response
    {
        let o = try Adaptive.decode(AuthenticationOptionsResponse.self, options)
        let request = AuthenticationFinishRequest(handle: o.handle, credential: try authenticator.get(o.publicKey, origin: origin))
        return try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/webauthn/authentications", headers: ["Content-Type": "application/json"],
            body: try Adaptive.json(request))
    }

    /// Options, then finish: the finish call's answer (or the options' refusal).
    func signIn(_ t: Adaptive.Tenant, _ username: String?, with authenticator: SoftAuthenticator, origin: String = Adaptive.origin)
        async throws -> TestHTTP.Response
    {
        let o = try await options(t, username)
        guard o.status == 200 else { return o }
        return try await finish(t, o, with: authenticator, origin: origin)
    }

    func settings(_ t: Adaptive.Tenant, _ json: String) async throws {
        let put = try await TestHTTP.json(
            "PUT", "\(Adaptive.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken, json: json)
        #expect(put.status == 200, "\(put.text)")
    }

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

    /// A tenant's ruleset that asks for a passkey and a one-time code closes the direct routes
    /// by default (at options already, and at finish for options given before); `directSignIn:
    /// true` keeps them; `false` closes them without a ruleset too. A tenant with neither keeps
    /// them. Before, a passkey alone signed in through them whatever the rules asked.
    @Test func aRulesetClosesTheDirectRoutesUnlessTheTenantKeepsThem() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let alice = try await adaptive.register("alice", in: t)
        // No ruleset, no setting: open.
        let open = try await signIn(t, "alice", with: alice)
        #expect(open.status == 200 && (try? open.json())?["sessionToken"] != nil, "\(open.text)")
        let before = try await options(t, nil)
        #expect(before.status == 200)
        let uafBefore = try await TestHTTP.json("POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/uaf/authentications/requests", json: "{}")
        #expect(uafBefore.status == 200, "\(uafBefore.text)")

        let rules = #"{"rules": [{"name": "passkey-and-code", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "email_otp"]]}]}"#
        #expect(try await adaptive.putRuleset(t, rules).status == 200)
        var refused: TestHTTP.Response?
        #expect(await TestStack.eventually {
            refused = try? await options(t, "alice")
            return refused?.status == 403
        })
        #expect(refused.flatMap(Self.code) == "direct_sign_in_disabled", "\(refused?.text ?? "")")
        // Options given before the ruleset: refused at finish, nothing recorded.
        let late = try await finish(t, before, with: alice)
        #expect(late.status == 403 && Self.code(late) == "direct_sign_in_disabled", "\(late.text)")
        // The UAF routes alike.
        let uafRequests = try await TestHTTP.json("POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/uaf/authentications/requests", json: "{}")
        #expect(uafRequests.status == 403 && Self.code(uafRequests) == "direct_sign_in_disabled", "\(uafRequests.text)")
        let uafFinish = try await TestHTTP.json(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/uaf/authentications", json: #"{"uafResponse": "[]"}"#)
        #expect(uafFinish.status == 403 && Self.code(uafFinish) == "direct_sign_in_disabled", "\(uafFinish.text)")

        // Kept explicitly beside the rules.
        try await settings(t, #"{"directSignIn": true}"#)
        let got = try await TestHTTP.send(
            "GET", "\(Adaptive.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        #expect((try? got.json())?["directSignIn"] as? Bool == true, "\(got.text)")
        var kept: TestHTTP.Response?
        #expect(await TestStack.eventually {
            kept = try? await signIn(t, "alice", with: alice)
            return kept?.status == 200
        })
        #expect((try? kept?.json())?["username"] as? String == "alice", "\(kept?.text ?? "")")

        // Closed explicitly, on a tenant without rules.
        let u = try await adaptive.tenant()
        let bob = try await adaptive.register("bob", in: u)
        try await settings(u, #"{"directSignIn": false}"#)
        var closed: TestHTTP.Response?
        #expect(await TestStack.eventually {
            closed = try? await signIn(u, nil, with: bob)
            return closed?.status == 403
        })
        #expect(closed.flatMap(Self.code) == "direct_sign_in_disabled", "\(closed?.text ?? "")")
    }

    /// The direct route honours the user's fido2 standing and counts its refused assertions
    /// towards it: two failures put the method on probation (429 `method_probation`), the third
    /// locks it (423 `method_locked`, the user named by the credential alone too), and the RP's
    /// unlock opens it again. Before, the route signed in whatever the standing.
    @Test func theDirectRouteCountsFailuresAndRefusesALockedPasskey() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let carol = try await adaptive.register("carol", in: t)
        try await settings(t, #"{"probationAfterFailures": 2, "probationSeconds": 1, "lockAfterFailures": 3}"#)
        for _ in 0..<2 {
            let failed = try await signIn(t, "carol", with: carol, origin: "https://evil.example")
            #expect(failed.status == 400 && Self.code(failed) == "origin_not_allowed", "\(failed.text)")
        }
        let probation = try await signIn(t, "carol", with: carol)
        #expect(probation.status == 429 && Self.code(probation) == "method_probation" && probation.headers["retry-after"] != nil, "\(probation.text)")
        try await Task.sleep(for: .milliseconds(1100))
        let third = try await signIn(t, nil, with: carol, origin: "https://evil.example")
        #expect(third.status == 400 && Self.code(third) == "origin_not_allowed", "\(third.text)")
        let locked = try await signIn(t, nil, with: carol)
        #expect(locked.status == 423 && Self.code(locked) == "method_locked", "\(locked.text)")
        let lockedByName = try await signIn(t, "carol", with: carol)
        #expect(lockedByName.status == 423 && Self.code(lockedByName) == "method_locked", "\(lockedByName.text)")
        let unlock = try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/users/carol/methods/fido2/unlock", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unlock.status == 204)
        let again = try await signIn(t, nil, with: carol)
        #expect(again.status == 200, "\(again.text)")
    }

    /// The `sid` claim of a session token.
    static func sid(ofToken token: String) throws -> String {
        let payload = try #require(token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode(String($0)) })
        return try #require((try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])?["sid"] as? String)
    }

    /// The RP revokes a direct sign-in's session by its id (`DELETE …/sessions/{sid}`, 204), as
    /// it revokes a flow's: its token is then refused wherever session tokens are taken, and a
    /// second revocation answers 404. Another tenant's key and path, and ids this deployment did
    /// not issue, are 404. Before, the direct route wrote no session row and every revocation of
    /// its sessions answered 404, the token going on until it expired.
    @Test func theRelyingPartyRevokesADirectSignInSession() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let other = try await adaptive.tenant()
        let dana = try await adaptive.register("dana", in: t)
        let signedIn = try await signIn(t, "dana", with: dana)
        try #require(signedIn.status == 200, "\(signedIn.text)")
        let token = try #require((try signedIn.json())["sessionToken"] as? String)
        let sid = try Self.sid(ofToken: token)
        let bearer = ["Authorization": "Bearer \(token)"]
        let reads = [
            "\(Adaptive.registration)/v1/tenants/\(t.id)/users/dana/credentials", "\(OOBApprovalStackTests.oob)/v1/tenants/\(t.id)/users/dana/devices",
        ]
        for url in reads {
            let answer = try await TestHTTP.send("GET", url, headers: bearer)
            #expect(answer.status == 200, "\(url): \(answer.text)")
        }
        func revoke(_ tenant: Adaptive.Tenant, _ sid: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("DELETE", "\(Adaptive.authentication)/v1/tenants/\(tenant.id)/sessions/\(sid)", headers: ["Authorization": "Bearer \(tenant.key)"])
        }
        // Not this deployment's, or not this tenant's: 404, nothing revoked.
        var forged = try #require(Base64URL.decode(sid))
        forged[forged.count - 1] ^= 1
        for (tenant, value) in [(t, Base64URL.encode(forged)), (t, String(repeating: "A", count: sid.utf8.count)), (other, sid)] {
            let refused = try await revoke(tenant, value)
            #expect(refused.status == 404 && Self.code(refused) == "not_found", "\(value): \(refused.text)")
        }
        #expect(try await TestHTTP.send("GET", reads[0], headers: bearer).status == 200, "a refused revocation revoked nothing")

        let revoked = try await revoke(t, sid)
        #expect(revoked.status == 204, "\(revoked.text)")
        for url in reads {
            let refused = await TestStack.eventually(timeout: .seconds(30)) {
                (try? await TestHTTP.send("GET", url, headers: bearer).status) == 401
            }
            #expect(refused, "\(url) still took the revoked session's token")
        }
        let again = try await revoke(t, sid)
        #expect(again.status == 404, "\(again.text)")
        // Signing in again gives a new session, which works.
        let next = try await signIn(t, "dana", with: dana)
        let fresh = try #require((try next.json())["sessionToken"] as? String)
        #expect(try Self.sid(ofToken: fresh) != sid)
        #expect(try await TestHTTP.send("GET", reads[0], headers: ["Authorization": "Bearer \(fresh)"]).status == 200)
    }

    /// Quick authentication counts a refused assertion as a flow's fido2 step does: two put the
    /// method on probation, the third locks it; a success clears the count. Before, its
    /// failures were never counted, so it could be hammered without ever locking.
    @Test func failedQuickAssertionsCountTowardsProbationAndTheLock() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let dave = try await adaptive.register("dave", in: t)
        try await settings(t, #"{"probationAfterFailures": 2, "probationSeconds": 1, "lockAfterFailures": 3}"#)
        let start = Int64(Date().timeIntervalSince1970)
        var offset: Int64 = 0
        func quick(origin: String = Adaptive.origin) async throws -> TestHTTP.Response {
            offset += 1
            let time = start + offset
            let challenge = QuickAuthChallenge.derive(tenant: t.id, credentialID: dave.credentialID, time: time)
            let options = RequestOptionsJSON(
                challenge: Base64URL.encode(challenge), timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: [])
            let request = QuickSignInRequest(time: time, credential: try dave.get(options, origin: origin), context: [:])
            return try await TestHTTP.send(
                "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/signins/quick", headers: ["Content-Type": "application/json"],
                body: try Adaptive.json(request))
        }
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        func failures() async throws -> Int? {
            try await pool.withConnection {
                try await $0.query("SELECT consecutive FROM method_failures WHERE tenant_id = \(t.id) AND username = 'dave' AND method = 'fido2'")
            }.first?.int("consecutive")
        }
        // One failure, then a success: the count is cleared.
        let first = try await quick(origin: "https://evil.example")
        #expect(first.status == 400 && Self.code(first) == "origin_not_allowed", "\(first.text)")
        #expect(try await failures() == 1)
        let ok = try await quick()
        #expect(ok.status == 200 && (try? ok.json())?["status"] as? String == "SUCCEEDED", "\(ok.text)")
        #expect(try await failures() == nil)
        // Two failures: probation.
        for _ in 0..<2 {
            let failed = try await quick(origin: "https://evil.example")
            #expect(failed.status == 400 && Self.code(failed) == "origin_not_allowed", "\(failed.text)")
        }
        let probation = try await quick()
        #expect(probation.status == 429 && Self.code(probation) == "method_probation" && probation.headers["retry-after"] != nil, "\(probation.text)")
        // The third: locked, until the RP unlocks it.
        try await Task.sleep(for: .milliseconds(1100))
        let third = try await quick(origin: "https://evil.example")
        #expect(third.status == 400 && Self.code(third) == "origin_not_allowed", "\(third.text)")
        let locked = try await quick()
        #expect(locked.status == 423 && Self.code(locked) == "method_locked", "\(locked.text)")
        let unlock = try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/users/dave/methods/fido2/unlock", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unlock.status == 204)
        let again = try await quick()
        #expect(again.status == 200, "\(again.text)")
    }
}
