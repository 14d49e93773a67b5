import Foundation
import OTP
import Postgres
import Schema
import Testing
import TestSupport

/// A sign-in started without a username is decided on an anonymous user (no methods, no
/// failures, no locks). Once a discoverable passkey identifies the user, the rules decide again
/// with the user's facts, and the user's anti-hammering standing holds for that step. Before,
/// the first decision stood: a passkey alone signed in a user whose rules ask for a second
/// factor, a denied user, or one whose passkey method is locked.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct AnonymousSignInRulesStackTests {
    static let registration = "http://127.0.0.1:8081"
    static let authentication = "http://127.0.0.1:8082"
    let adaptive = AdaptiveSignInStackTests()

    /// A user with a discoverable passkey and a confirmed TOTP method.
    func user(in t: AdaptiveSignInStackTests.Tenant) async throws -> (String, SoftAuthenticator, TOTP) {
        let username = "anon-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await adaptive.register(username, in: t)
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let created = try await TestHTTP.json("POST", methods, token: t.key, json: #"{"type": "totp"}"#)
        try #require(created.status == 201, "\(created.text)")
        let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let generator = try OTPAuthURI(parsing: try #require(totp.otpauthUri)).makeTOTP()
        let confirmed = try await TestHTTP.json(
            "POST", "\(methods)/\(totp.methodId)/confirm", token: t.key, json: #"{"code": "\#(try generator.code(at: Date()))"}"#)
        try #require(confirmed.status == 200, "\(confirmed.text)")
        return (username, passkey, generator)
    }

    static let secondFactorRules = #"""
        {"rules": [
          {"name": "totp-users", "when": {"fact": "user.registeredMethods", "op": "contains", "value": "totp"},
           "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "totp"]]},
          {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}
        ]}
        """#

    @Test func aPasskeyThatIdentifiesTheUserLeavesTheSecondFactorTheirRulesAsk() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let (username, passkey, generator) = try await user(in: t)
        #expect(try await adaptive.putRuleset(t, Self.secondFactorRules).status == 200)
        // The authentication service knows the TOTP method (registration's event) and the rules.
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.sequences == [["fido2", "totp"]] })

        let anonymous = try await adaptive.start(t, username: nil)
        #expect(anonymous.status == "IN_PROGRESS" && anonymous.matchedRule == "passkey" && anonymous.sequences == [["fido2"]])
        // The start's signals (the client's IP) are kept to decide again with the user...
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        func factsKept() async throws -> Bool? {
            try await pool.withConnection {
                try await $0.query("SELECT signals IS NOT NULL OR context IS NOT NULL AS kept FROM signin_flows WHERE id = \(anonymous.signinId)")
            }.first?.bool("kept")
        }
        #expect(try await factsKept() == true)
        let stepped = try await adaptive.step(t, anonymous.signinId, with: passkey)
        try #require(stepped.status == 200, "\(stepped.text)")
        let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, stepped)
        #expect(progress.status == "IN_PROGRESS" && progress.completedMethods == ["fido2"] && progress.remainingSequences == [["totp"]], "\(stepped.text)")
        #expect(progress.sessionToken == nil && progress.refreshToken == nil, "\(stepped.text)")
        // ...and forgotten once decided on.
        #expect(try await factsKept() == false)

        // The second factor completes it, as for a sign-in started with the username.
        let base = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(anonymous.signinId)/methods/totp"
        let challenge = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        #expect(challenge.status == 200, "\(challenge.text)")
        // The next time step: the current code confirmed the method and would be a replay.
        let code = try generator.code(at: Date().addingTimeInterval(30))
        let verified = try await TestHTTP.send("POST", "\(base)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(code)"}"#.utf8))
        let done = try? AdaptiveSignInStackTests.decode(SignInProgress.self, verified)
        #expect(done?.status == "SUCCEEDED" && done?.completedMethods == ["fido2", "totp"] && done?.sessionToken != nil, "\(verified.text)")
    }

    @Test func aUserTheRulesDenyIsDeniedOnceThePasskeyIdentifiesThem() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let (username, passkey, _) = try await user(in: t)
        #expect(try await adaptive.putRuleset(t, #"""
            {"rules": [
              {"name": "no-totp-users", "when": {"fact": "user.registeredMethods", "op": "contains", "value": "totp"}, "action": "DENY"},
              {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}
            ]}
            """#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.status == "DENIED" })

        let anonymous = try await adaptive.start(t, username: nil)
        #expect(anonymous.status == "IN_PROGRESS" && anonymous.sequences == [["fido2"]])
        let stepped = try await adaptive.step(t, anonymous.signinId, with: passkey)
        let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, stepped)
        #expect(stepped.status == 200 && progress.status == "DENIED" && progress.remainingSequences.isEmpty, "\(stepped.text)")
        #expect(progress.sessionToken == nil && progress.refreshToken == nil && !stepped.text.contains("rt_"), "\(stepped.text)")
        // The flow is over: no further step.
        let again = try await TestHTTP.send("GET", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(anonymous.signinId)")
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, again))?.status == "DENIED", "\(again.text)")
        let retried = try await adaptive.step(t, anonymous.signinId, with: passkey)
        #expect(retried.status == 409, "\(retried.text)")
    }

    @Test func aLockedPasskeyMethodCannotBeCompletedWithoutAUsername() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let (username, passkey, _) = try await user(in: t)
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}]}"#).status == 200)
        // The user's fido2 method is locked (as ten failures would lock it).
        let auth = TestStack.pool(database: "signet_authentication", size: 1)
        defer { auth.close() }
        try await auth.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO method_failures (tenant_id, username, method, consecutive, last_failure_at, locked_at)
                VALUES (\(t.id), \(username), 'fido2', 10, now(), now())
                """)
        }
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.status == "FAILED" })

        let anonymous = try await adaptive.start(t, username: nil)
        #expect(anonymous.sequences == [["fido2"]])
        let stepped = try await adaptive.step(t, anonymous.signinId, with: passkey)
        let code = try stepped.json()["code"] as? String
        #expect(stepped.status == 423 && code == "method_locked" && !stepped.text.contains("sessionToken"), "\(stepped.text)")
        let standing = try await TestHTTP.send("GET", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(anonymous.signinId)")
        let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, standing)
        #expect(progress.status == "IN_PROGRESS" && progress.completedMethods.isEmpty, "\(standing.text)")
    }
}
