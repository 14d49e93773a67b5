import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport
import Tokens

/// Adaptive sign-in through the running services: a tenant's ruleset decides per sign-in; the
/// flow walks the methods; sessions rotate refresh tokens; anti-hammering locks a method.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct AdaptiveSignInStackTests {
    static let registration = "http://127.0.0.1:8081"
    static let authentication = "http://127.0.0.1:8082"
    static let origin = "http://localhost:8080"

    struct Tenant {
        let id: String
        let key: String
    }

    static func json<T: Encodable>(_ value: T) throws -> [UInt8] {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        return Array(try e.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ r: TestHTTP.Response) throws -> T {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return try d.decode(T.self, from: Data(r.body))
    }

    /// A new tenant (rpId localhost) with an RP key, known to the authentication service.
    func tenant() async throws -> Tenant {
        let id = "adaptive-\(UInt32.random(in: 0...UInt32.max))"
        let put = try await TestHTTP.json(
            "PUT", "\(Self.registration)/v1/admin/tenants/\(id)", token: TestStack.adminToken,
            json: #"{"displayName":"Adaptive","rpId":"localhost","origins":["\#(Self.origin)"]}"#)
        #expect(put.status == 201)
        let issued = try await TestHTTP.json("POST", "\(Self.registration)/v1/admin/tenants/\(id)/api-keys", token: TestStack.adminToken, json: "{}")
        let key = try #require(try issued.json()["apiKey"] as? String)
        #expect(await TestStack.eventually { (try? await TestHTTP.send("GET", "\(Self.authentication)/v1/tenants/\(id)"))?.status == 200 })
        // The key's own event may trail the tenant's: wait until the authentication service
        // takes it (an unknown session is 404 to the RP, 401 to anyone else).
        #expect(await TestStack.eventually {
            (try? await TestHTTP.send("DELETE", "\(Self.authentication)/v1/tenants/\(id)/sessions/none", headers: ["Authorization": "Bearer \(key)"]))?.status == 404
        })
        // The transaction service takes the key from the same event, on its own time: an
        // unknown transaction is 404 to a known key, 401 before the key has arrived.
        #expect(await TestStack.eventually {
            (try? await TestHTTP.send(
                "GET", "http://127.0.0.1:8083/v1/tenants/\(id)/transactions/\(UUID().uuidString.lowercased())",
                headers: ["Authorization": "Bearer \(key)"]))?.status == 404
        })
        return Tenant(id: id, key: key)
    }

    /// Registers a credential for `username`; waits until sign-in knows it.
    func register(_ username: String, in tenant: Tenant) async throws -> SoftAuthenticator {
        let base = "\(Self.registration)/v1/tenants/\(tenant.id)/webauthn/registrations"
        let auth = ["Authorization": "Bearer \(tenant.key)", "Content-Type": "application/json"]
        let o = try Self.decode(
            RegistrationOptionsResponse.self,
            try await TestHTTP.send("POST", "\(base)/options", headers: auth, body: try Self.json(RegistrationOptionsRequest(username: username))))
        let authenticator = try SoftAuthenticator()
        let finish = try await TestHTTP.send(
            "POST", base, headers: auth,
            body: try Self.json(RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Self.origin))))
        #expect(finish.status == 201)
        let known = await TestStack.eventually {
            let r = try? await TestHTTP.send(
                "POST", "\(Self.authentication)/v1/tenants/\(tenant.id)/webauthn/authentications/options", headers: ["Content-Type": "application/json"],
                body: try! Self.json(AuthenticationOptionsRequest(username: username)))
            return (try? Self.decode(AuthenticationOptionsResponse.self, r!))?.publicKey.allowCredentials.contains { $0.id == authenticator.credentialIDBase64URL } == true
        }
        #expect(known)
        return authenticator
    }

    func start(_ tenant: Tenant, username: String?, amount: Int = 10, ip: String = "203.0.113.7") async throws -> SignInStarted {
        // The address as the gateway would forward it (the service reads the last
        // X-Forwarded-For entry; tests call it directly).
        let body = SignInStartRequest(username: username, signals: [:], context: ["transactionAmount": .int(Int64(amount))])
        let r = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(tenant.id)/signins", headers: ["Content-Type": "application/json", "X-Forwarded-For": ip],
            body: try Self.json(body))
        #expect(r.status == 201, "\(r.text)")
        return try Self.decode(SignInStarted.self, r)
    }

    /// One fido2 step: challenge, assertion by `authenticator`, verify. Returns the verify response.
    func step(_ tenant: Tenant, _ signin: String, with authenticator: SoftAuthenticator, origin: String = origin) async throws -> TestHTTP.Response {
        let base = "\(Self.authentication)/v1/tenants/\(tenant.id)/signins/\(signin)/methods/fido2"
        let c = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        guard c.status == 200 else { return c }
        let options = try #require(try c.json()["publicKey"] as? [String: Any])
        let request = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: options))
        let assertion = try authenticator.get(request, origin: origin)
        return try await TestHTTP.send(
            "POST", "\(base)/verify", headers: ["Content-Type": "application/json"], body: try Self.json(FIDO2VerifyRequest(credential: assertion)))
    }

    func putRuleset(_ tenant: Tenant, _ json: String) async throws -> TestHTTP.Response {
        try await TestHTTP.json("PUT", "\(Self.authentication)/v1/admin/tenants/\(tenant.id)/rulesets/authentication", token: TestStack.adminToken, json: json)
    }

    static let ruleset = """
        {"rules": [
          {"name": "blocked-network", "when": {"fact": "signals.ip", "op": "inCidr", "value": ["198.51.100.0/24"]}, "action": "DENY"},
          {"name": "big-amount", "when": {"fact": "context.transactionAmount", "op": "gt", "value": 1000},
           "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "fido2"]], "maxTimeSeconds": 120},
          {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}
        ]}
        """

    @Test func rulesChooseTheSequenceAndTheFlowCompletesIt() async throws {
        try TestStack.require()
        let t = try await tenant()
        let username = "alice"
        let first = try await register(username, in: t)
        let second = try await register(username, in: t)

        // Invalid rulesets are refused with the path of the error.
        let invalid = try await putRuleset(t, #"{"rules": [{"name": "x", "action": "TRIGGER_AUTHENTICATION", "sequence": [["fido2"]]}]}"#)
        let invalidJSON = try invalid.json()
        #expect(invalid.status == 400 && invalidJSON["code"] as? String == "invalid_ruleset", "\(invalid.text)")
        #expect((invalidJSON["field"] as? String)?.hasPrefix("rules[0]") == true, "\(invalid.text)")
        let stored = try await putRuleset(t, Self.ruleset)
        #expect(stored.status == 200, "\(stored.text)")
        let version = try Self.decode(RulesetResource.self, stored).version
        #expect(version == 1)

        // A small amount: one passkey.
        let small = try await start(t, username: username, amount: 50)
        #expect(small.action == "TRIGGER_AUTHENTICATION" && small.matchedRule == "passkey" && small.sequences == [["fido2"]])
        let done = try await step(t, small.signinId, with: first)
        let smallResult = try Self.decode(SignInProgress.self, done)
        #expect(done.status == 200 && smallResult.status == "SUCCEEDED" && smallResult.completedMethods == ["fido2"], "\(done.text)")
        let token = try #require(smallResult.sessionToken)
        let jwks = try await TestHTTP.send("GET", "\(Self.authentication)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: t.id))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.claims.subject == username && jwt.claims[claim: "amr"] == .array(["fido2"]) && jwt.claims[claim: "acr"] == .string("fido2"))

        // A large amount: two different passkeys.
        let large = try await start(t, username: username, amount: 5000)
        #expect(large.matchedRule == "big-amount" && large.sequences == [["fido2", "fido2"]])
        let one = try Self.decode(SignInProgress.self, try await step(t, large.signinId, with: first))
        #expect(one.status == "IN_PROGRESS" && one.remainingSequences == [["fido2"]] && one.sessionToken == nil)
        let again = try await step(t, large.signinId, with: first)
        let againCode = try again.json()["code"] as? String
        #expect(again.status == 400 && againCode == "credential_already_used", "\(again.text)")
        let two = try await step(t, large.signinId, with: second)
        let twoResult = try Self.decode(SignInProgress.self, two)
        #expect(twoResult.status == "SUCCEEDED" && twoResult.completedMethods == ["fido2", "fido2"], "\(two.text)")
        let strong = try verifier.verify(try #require(twoResult.sessionToken), now: Date())
        #expect(strong.claims[claim: "acr"] == .string("fido2+fido2"))
        let finished = try await step(t, large.signinId, with: second)
        #expect(finished.status == 409)

        // A denied network.
        let denied = try await start(t, username: username, amount: 50, ip: "198.51.100.23")
        #expect(denied.action == "DENY" && denied.status == "DENIED" && denied.matchedRule == "blocked-network" && denied.sequences.isEmpty)

        // The network is the gateway's to say: an `ip` in the client's signals is kept as
        // `reportedIp` and changes nothing (a client on the denied network claiming another
        // address is still denied; one claiming the denied network is not).
        for (claimed, forwarded, action) in [("203.0.113.7", "198.51.100.23", "DENY"), ("198.51.100.23", "203.0.113.7", "TRIGGER_AUTHENTICATION")] {
            let r = try await TestHTTP.send(
                "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins", headers: ["Content-Type": "application/json", "X-Forwarded-For": forwarded],
                body: Array(#"{"username":"\#(username)","signals":{"ip":"\#(claimed)"},"context":{"transactionAmount":50}}"#.utf8))
            #expect(r.status == 201 && (try? r.json())?["action"] as? String == action, "\(claimed) via \(forwarded): \(r.text)")
        }

        // Explain says which rule matched and why the earlier ones did not.
        let explain = try await TestHTTP.json(
            "POST", "\(Self.authentication)/v1/admin/tenants/\(t.id)/rulesets/authentication/explain", token: TestStack.adminToken,
            json: #"{"facts": {"signals": {"ip": "203.0.113.7"}, "context": {"transactionAmount": 5000}}}"#)
        let trace = try explain.json()
        let entries = trace["rules"] as? [[String: Any]] ?? []
        #expect(explain.status == 200 && (trace["decision"] as? [String: Any])?["matchedRule"] as? String == "big-amount", "\(explain.text)")
        #expect(entries.first?["rule"] as? String == "blocked-network" && entries.first?["matched"] as? Bool == false)
    }

    @Test func refreshTokensRotateAndReuseRevokesTheSession() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("bob", in: t)
        let signin = try await start(t, username: "bob")
        let result = try Self.decode(SignInProgress.self, try await step(t, signin.signinId, with: authenticator))
        let refresh1 = try #require(result.refreshToken)
        let url = "\(Self.authentication)/v1/tenants/\(t.id)/sessions/refresh"
        func refresh(_ token: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("POST", url, headers: ["Content-Type": "application/json"], body: try Self.json(RefreshTokenRequest(refreshToken: token)))
        }
        let r1 = try await refresh(refresh1)
        #expect(r1.status == 200)
        let refresh2 = try Self.decode(SessionTokens.self, r1).refreshToken
        #expect(refresh2 != refresh1)
        // The newer token is used; then the retired one comes back: a copy. The whole session
        // ends, including the newest token.
        let r2 = try await refresh(refresh2)
        #expect(r2.status == 200)
        let refresh3 = try Self.decode(SessionTokens.self, r2).refreshToken
        let reused = try await refresh(refresh1)
        let reusedCode = try reused.json()["code"] as? String
        #expect(reused.status == 401 && reusedCode == "refresh_token_reused")
        let after = try await refresh(refresh3)
        let afterCode = try after.json()["code"] as? String
        #expect(after.status == 401 && afterCode == "invalid_refresh_token")
        // Logout of a fresh session.
        let next = try Self.decode(SignInProgress.self, try await step(t, try await start(t, username: "bob").signinId, with: authenticator))
        let logout = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/sessions/revoke", headers: ["Content-Type": "application/json"],
            body: try Self.json(RefreshTokenRequest(refreshToken: try #require(next.refreshToken))))
        #expect(logout.status == 204)
        #expect(try await refresh(try #require(next.refreshToken)).status == 401)
    }

    /// Two refreshes of one token at once (two tabs): both get working tokens and the user stays
    /// signed in; a retired token shown again after its successor was used still revokes.
    @Test func parallelRefreshesOfOneTokenKeepTheSession() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("erin", in: t)
        let result = try Self.decode(SignInProgress.self, try await step(t, try await start(t, username: "erin").signinId, with: authenticator))
        let token = try #require(result.refreshToken)
        let url = "\(Self.authentication)/v1/tenants/\(t.id)/sessions/refresh"
        func refresh(_ token: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("POST", url, headers: ["Content-Type": "application/json"], body: try Self.json(RefreshTokenRequest(refreshToken: token)))
        }
        async let a = refresh(token)
        async let b = refresh(token)
        let (ra, rb) = try await (a, b)
        #expect(ra.status == 200 && rb.status == 200, "\(ra.text) \(rb.text)")
        let na = try Self.decode(SessionTokens.self, ra).refreshToken
        let nb = try Self.decode(SessionTokens.self, rb).refreshToken
        #expect(na != nb)
        // Each sibling works once.
        let fa = try await refresh(na)
        #expect(fa.status == 200, "\(fa.text)")
        let fb = try await refresh(nb)
        #expect(fb.status == 200, "\(fb.text)")
        // The first token again, now that what it was exchanged for has been used: a copy.
        let copied = try await refresh(token)
        let copiedCode = try copied.json()["code"] as? String
        #expect(copied.status == 401 && copiedCode == "refresh_token_reused", "\(copied.text)")
    }

    /// A retired token presented again within the grace gets one sibling, not one per
    /// presentation: a copy replayed twice while the client's own successor is unused revokes
    /// the session (each sibling would otherwise be a branch reuse detection never sees).
    @Test func aRetiredTokenGetsOneSiblingAtMost() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("fay", in: t)
        let result = try Self.decode(SignInProgress.self, try await step(t, try await start(t, username: "fay").signinId, with: authenticator))
        let token = try #require(result.refreshToken)
        let url = "\(Self.authentication)/v1/tenants/\(t.id)/sessions/refresh"
        func refresh(_ token: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("POST", url, headers: ["Content-Type": "application/json"], body: try Self.json(RefreshTokenRequest(refreshToken: token)))
        }
        let rotated = try await refresh(token)
        #expect(rotated.status == 200, "\(rotated.text)")
        let sibling = try await refresh(token)
        #expect(sibling.status == 200, "\(sibling.text)")
        let third = try await refresh(token)
        #expect(third.status == 401 && (try? third.json()["code"] as? String) == "refresh_token_reused", "\(third.text)")
        // The session is over: the client's own successor is refused too.
        let own = try Self.decode(SessionTokens.self, rotated).refreshToken
        #expect(try await refresh(own).status == 401)
    }

    @Test func repeatedFailuresPutTheMethodOnProbationThenLockIt() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("carol", in: t)
        let settings = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: #"{"probationAfterFailures": 2, "probationSeconds": 1, "lockAfterFailures": 3}"#)
        #expect(settings.status == 200, "\(settings.text)")
        let bad = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: #"{"lockAfterFailures": 1, "probationAfterFailures": 5}"#)
        let badField = try bad.json()["field"] as? String
        #expect(bad.status == 400 && badField == "lockAfterFailures")
        let signin = try await start(t, username: "carol")
        // Two failures (a wrong origin): probation.
        for _ in 0..<2 {
            let failed = try await step(t, signin.signinId, with: authenticator, origin: "https://evil.example")
            let code = try failed.json()["code"] as? String
            #expect(failed.status == 400 && code == "origin_not_allowed", "\(failed.text)")
        }
        let probation = try await step(t, signin.signinId, with: authenticator)
        let probationCode = try probation.json()["code"] as? String
        #expect(probation.status == 429 && probationCode == "method_probation" && probation.headers["retry-after"] != nil, "\(probation.text)")
        try await Task.sleep(for: .milliseconds(1100))
        // The third failure locks the method.
        _ = try await step(t, signin.signinId, with: authenticator, origin: "https://evil.example")
        let locked = try await step(t, signin.signinId, with: authenticator)
        let lockedCode = try locked.json()["code"] as? String
        #expect(locked.status == 423 && lockedCode == "method_locked", "\(locked.text)")
        // A new sign-in has no sequence left; the RP unlocks; sign-in works again.
        let blocked = try await start(t, username: "carol")
        #expect(blocked.status == "FAILED" && blocked.sequences.isEmpty)
        let unlock = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/users/carol/methods/fido2/unlock", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unlock.status == 204)
        let retry = try await start(t, username: "carol")
        let ok = try Self.decode(SignInProgress.self, try await step(t, retry.signinId, with: authenticator))
        #expect(ok.status == "SUCCEEDED")
    }

    /// Thirty wrong answers sent at once, each to its own sign-in of the same user (so that no
    /// shared challenge can stop them): no more are evaluated than the policy allows before its
    /// probation (the count is taken before the check, under the row's lock), the rest are
    /// refused unevaluated, and the user's count says so.
    @Test func parallelGuessesNeverExceedThePolicy() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("dave", in: t)
        let settings = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: #"{"probationAfterFailures": 5, "probationSeconds": 60, "lockAfterFailures": 10, "signInsPerMinutePerIP": 1000, "signInsPerSecondPerTenant": 1000}"#)
        #expect(settings.status == 200, "\(settings.text)")
        // Thirty flows, each with its challenge, and an assertion for each signed by the right
        // key over the right challenge from a wrong origin: each one evaluated fails with
        // origin_not_allowed.
        var requests: [(url: String, body: [UInt8])] = []
        for _ in 0..<30 {
            let signin = try await start(t, username: "dave")
            let base = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(signin.signinId)/methods/fido2"
            let c = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            try #require(c.status == 200, "\(c.text)")
            let options = try #require(try c.json()["publicKey"] as? [String: Any])
            let request = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: options))
            requests.append(("\(base)/verify", try Self.json(FIDO2VerifyRequest(credential: try authenticator.get(request, origin: "https://evil.example")))))
        }
        let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for r in requests {
                group.addTask {
                    let response = try await TestHTTP.send("POST", r.url, headers: ["Content-Type": "application/json"], body: r.body)
                    return (response.status, try? response.json()["code"] as? String)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let evaluated = statuses.filter { $0.1 == "origin_not_allowed" }.count
        let refused = statuses.filter { $0.0 == 429 && $0.1 == "method_probation" }.count
        #expect(evaluated >= 1 && evaluated <= 5, "\(statuses)")
        #expect(evaluated + refused == 30, "\(statuses)")
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        let count = try await pool.withConnection {
            try await $0.query("SELECT consecutive FROM method_failures WHERE tenant_id = \(t.id) AND username = 'dave' AND method = 'fido2'")
        }.first?.int("consecutive")
        #expect(count == evaluated, "counted \(String(describing: count)), evaluated \(evaluated)")
    }

    @Test func quickAuthenticationTakesOneRoundTripOnceWithinTheWindow() async throws {
        try TestStack.require()
        let t = try await tenant()
        let first = try await register("dave", in: t)
        let second = try await register("dave", in: t)
        func quick(_ authenticator: SoftAuthenticator, time: Int64, amount: Int = 10) async throws -> (TestHTTP.Response, QuickSignInRequest) {
            let challenge = QuickAuthChallenge.derive(tenant: t.id, credentialID: authenticator.credentialID, time: time)
            let options = RequestOptionsJSON(
                challenge: Base64URL.encode(challenge), timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: [])
            let request = QuickSignInRequest(
                time: time, credential: try authenticator.get(options, origin: Self.origin), context: ["transactionAmount": .int(Int64(amount))])
            return (try await send(request), request)
        }
        func send(_ request: QuickSignInRequest) async throws -> TestHTTP.Response {
            try await TestHTTP.send(
                "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins/quick", headers: ["Content-Type": "application/json"], body: try Self.json(request))
        }
        let now = Int64(Date().timeIntervalSince1970)
        let (ok, request) = try await quick(first, time: now)
        let result = try Self.decode(QuickSignInResult.self, ok)
        #expect(ok.status == 200 && result.status == "SUCCEEDED" && result.sessionToken != nil, "\(ok.text)")
        // The same assertion again: its challenge is remembered until the window has passed.
        let replay = try await send(request)
        let replayCode = try replay.json()["code"] as? String
        #expect(replay.status == 400 && replayCode == "challenge_replayed", "\(replay.text)")
        // A time outside the window (default ±60 s).
        let (stale, _) = try await quick(first, time: now - 120)
        let staleCode = try stale.json()["code"] as? String
        #expect(stale.status == 400 && staleCode == "quick_auth_time_out_of_window")
        let (early, _) = try await quick(first, time: now + 120)
        #expect(early.status == 400)
        // Rules still apply: a large amount needs a second passkey, through the flow.
        #expect(try await putRuleset(t, Self.ruleset).status == 200)
        let (big, _) = try await quick(first, time: now + 1, amount: 5000)
        let partial = try Self.decode(QuickSignInResult.self, big)
        #expect(partial.status == "IN_PROGRESS" && partial.remainingSequences == [["fido2"]] && partial.sessionToken == nil, "\(big.text)")
        let rest = try Self.decode(SignInProgress.self, try await step(t, partial.signinId, with: second))
        #expect(rest.status == "SUCCEEDED" && rest.completedMethods == ["fido2", "fido2"])
        // A user whose fido2 is locked (as ten failures lock it) does not sign in this way either.
        let auth = TestStack.pool(database: "signet_authentication", size: 1)
        defer { auth.close() }
        try await auth.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO method_failures (tenant_id, username, method, consecutive, last_failure_at, locked_at)
                VALUES (\(t.id), 'dave', 'fido2', 10, now(), now())
                ON CONFLICT (tenant_id, username, method) DO UPDATE SET consecutive = 10, locked_at = now()
                """)
        }
        let (locked, _) = try await quick(first, time: now + 2)
        #expect(locked.status == 423 && (try? locked.json()["code"] as? String) == "method_locked", "\(locked.text)")
    }

    @Test func registrationRulesSuggestAndTheAnswerIsRemembered() async throws {
        try TestStack.require()
        let t = try await tenant()
        let authenticator = try await register("erin", in: t)
        let rules = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration", token: TestStack.adminToken,
            json: #"{"rules": [{"name": "one-key-only", "when": {"fact": "user.methodCounts.fido2", "op": "lt", "value": 2}, "action": "SUGGEST_REGISTRATION", "methods": ["fido2"]}]}"#)
        #expect(rules.status == 200, "\(rules.text)")
        let wrongKind = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration", token: TestStack.adminToken,
            json: #"{"rules": [{"name": "x", "action": "ALLOW"}]}"#)
        let wrongKindField = try wrongKind.json()["field"] as? String
        #expect(wrongKind.status == 400 && wrongKindField == "rules[0].action", "\(wrongKind.text)")
        func signIn() async throws -> (SignInStarted, SignInProgress) {
            let started = try await start(t, username: "erin")
            return (started, try Self.decode(SignInProgress.self, try await step(t, started.signinId, with: authenticator)))
        }
        let (first, result) = try await signIn()
        #expect(result.registration == RegistrationSuggestion(action: "SUGGEST_REGISTRATION", methods: ["fido2"], matchedRule: "one-key-only", sequences: [["fido2"]]))
        let answer = try await TestHTTP.send(
            "PUT", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(first.signinId)/registration-answer", headers: ["Content-Type": "application/json"],
            body: Array(#"{"answer": "NOT_NOW"}"#.utf8))
        #expect(answer.status == 204)
        // A sign-in with the method suggested (a passkey) does not ask again after NOT_NOW.
        let (afterNotNow, quiet) = try await signIn()
        #expect(quiet.registration == nil)
        // The signed-in user asks for themself, independently of a sign-in (the seed's
        // suggestRegister), at the registration service with their session token.
        let token = try #require(quiet.sessionToken)
        func ownSuggestion(for user: String = "erin") async throws -> TestHTTP.Response {
            try await TestHTTP.send(
                "GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(user)/registration-suggestion", headers: ["Authorization": "Bearer \(token)"])
        }
        let asked = try await ownSuggestion()
        #expect(asked.status == 200, "\(asked.text)")
        #expect(
            try Self.decode(RegistrationDecision.self, asked)
                == RegistrationDecision(action: "SUGGEST_REGISTRATION", methods: ["fido2"], matchedRule: "one-key-only", answer: "NOT_NOW", sequences: [["fido2"]]))
        #expect(try await ownSuggestion(for: "someone-else").status == 403)
        // NEVER: no suggestion at any sign-in, until the relying party resets it.
        let never = try await TestHTTP.send(
            "PUT", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(afterNotNow.signinId)/registration-answer",
            headers: ["Content-Type": "application/json"], body: Array(#"{"answer": "NEVER"}"#.utf8))
        #expect(never.status == 204)
        #expect(try await signIn().1.registration == nil)
        #expect(try await signIn().1.registration == nil)
        #expect(try Self.decode(RegistrationDecision.self, try await ownSuggestion()).answer == "NEVER")
        // The relying party resets the answer: the suggestion comes back.
        let reset = try await TestHTTP.send(
            "DELETE", "\(Self.authentication)/v1/tenants/\(t.id)/users/erin/registration-answer", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(reset.status == 204)
        #expect(try await signIn().1.registration?.action == "SUGGEST_REGISTRATION")
        #expect(try Self.decode(RegistrationDecision.self, try await ownSuggestion()).answer == nil)

        // Suggestions follow quick sign-ins…
        let time = Int64(Date().timeIntervalSince1970)
        let quickOptions = RequestOptionsJSON(
            challenge: Base64URL.encode(QuickAuthChallenge.derive(tenant: t.id, credentialID: authenticator.credentialID, time: time)), timeout: nil,
            rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: [])
        let quick = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins/quick", headers: ["Content-Type": "application/json"],
            body: try Self.json(QuickSignInRequest(time: time, credential: try authenticator.get(quickOptions, origin: Self.origin))))
        let quickResult = try Self.decode(QuickSignInResult.self, quick)
        #expect(quickResult.status == "SUCCEEDED" && quickResult.registration?.methods == ["fido2"], "\(quick.text)")
        // …and ALLOW.
        #expect(try await putRuleset(t, #"{"rules": [{"name": "trusted", "action": "ALLOW"}]}"#).status == 200)
        let allowed = try await start(t, username: "erin")
        #expect(allowed.status == "SUCCEEDED" && allowed.registration?.action == "SUGGEST_REGISTRATION" && allowed.registration?.matchedRule == "one-key-only")
    }

    @Test func signInsAreRateLimitedPerAddress() async throws {
        try TestStack.require()
        let t = try await tenant()
        let settings = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: #"{"signInsPerMinutePerIP": 3}"#)
        #expect(settings.status == 200)
        let body = Array(#"{"username": "frank"}"#.utf8)
        let url = "\(Self.authentication)/v1/tenants/\(t.id)/signins"
        // A client address of its own (the gateway would append the real one last).
        let headers = ["Content-Type": "application/json", "X-Forwarded-For": "192.0.2.\(UInt8.random(in: 1...254))"]
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await TestHTTP.send("POST", url, headers: headers, body: body).status) }
        #expect(statuses == [201, 201, 201, 429])
        let limited = try await TestHTTP.send("POST", url, headers: headers, body: body)
        let limitedCode = try limited.json()["code"] as? String
        #expect(limited.headers["retry-after"] != nil && limitedCode == "too_many_requests")
        // Another address is not affected.
        #expect(try await TestHTTP.send("POST", url, headers: ["Content-Type": "application/json", "X-Forwarded-For": "198.18.0.1"], body: body).status == 201)
    }
}
