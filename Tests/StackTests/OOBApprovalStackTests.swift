import Crypto
import Foundation
import Schema
import Testing
import TestSupport
import Tokens

/// Out-of-band approvals through the running stack: software phones (iOS and Android) create
/// their devices on the oob service, the RP binds them, asks for approvals, and the pushes
/// arrive in the local push sink over HTTP/2 (APNs with a provider token, FCM with an OAuth
/// access token from the sink's token endpoint); the phone accepts with the matching number
/// and the RP's long poll sees it; a token the sink reports gone is marked invalid.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct OOBApprovalStackTests {
    static let oob = "http://127.0.0.1:8084"
    let adaptive = AdaptiveSignInStackTests()

    /// A call signed by `phone` (the service's path; the gateway's would carry /oob in front).
    static func device(_ phone: SoftwareDevice, _ method: String, _ path: String, json: String? = nil) async throws -> TestHTTP.Response {
        let body = Array((json ?? "").utf8)
        var headers = ["Device-Proof": try phone.proof(method, String(path.prefix { $0 != "?" }), body: body)]
        if json != nil { headers["Content-Type"] = "application/json" }
        return try await TestHTTP.send(method, oob + path, headers: headers, body: json == nil ? nil : body)
    }

    /// Creates the phone's device and binds it to `username` by the RP: its id.
    static func enrol(_ phone: SoftwareDevice, as username: String, tenant: AdaptiveSignInStackTests.Tenant, appId: String) async throws -> String {
        let created = try await device(phone, "POST", "/v1/tenants/\(tenant.id)/devices", json: try phone.upsertBody(appId: appId))
        try #require(created.status == 201, "\(created.text)")
        let token = try #require(try created.json()["deviceToken"] as? String)
        let bound = try await TestHTTP.json(
            "POST", "\(oob)/v1/tenants/\(tenant.id)/users/\(username)/devices", token: tenant.key, json: #"{"deviceToken":"\#(token)"}"#)
        try #require(bound.status == 200, "\(bound.text)")
        return try #require(try created.json()["deviceId"] as? String)
    }

    /// The push the sink recorded for `approvalId`, if any.
    static func push(for approvalId: String) -> [String: Any]? {
        let dir = "\(TestStack.dataDir)/sinks/push"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasSuffix(".json") && !name.hasPrefix(".") {
            guard let data = FileManager.default.contents(atPath: "\(dir)/\(name)"), let text = String(data: data, encoding: .utf8),
                text.contains(approvalId), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { continue }
            return object
        }
        return nil
    }

    /// Lets the tenant's RP give approvals' display text (app settings `allowDynamicText`).
    static func allowDynamicText(_ t: AdaptiveSignInStackTests.Tenant, _ allow: Bool = true) async throws {
        let r = try await TestHTTP.json(
            "PUT", "\(oob)/v1/admin/tenants/\(t.id)/app-settings", token: TestStack.adminToken,
            json: #"{"domains":[],"iosAppIds":[],"androidApps":[],"allowDynamicText":\#(allow)}"#)
        try #require((200..<300).contains(r.status), "\(r.text)")
    }

    func waitForOOBKey(_ t: AdaptiveSignInStackTests.Tenant) async {
        // The oob service takes the tenant's key from registration's event on its own time.
        #expect(await TestStack.eventually {
            (try? await TestHTTP.send("GET", "\(Self.oob)/v1/tenants/\(t.id)/users/nobody/devices", headers: ["Authorization": "Bearer \(t.key)"]))?.status == 200
        })
    }

    @Test func aPushedApprovalIsAcceptedWithTheNumberAndTheLongPollSeesIt() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await Self.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        try await Self.allowDynamicText(t)
        let created = try await TestHTTP.json(
            "POST", "\(Self.oob)/v1/tenants/\(t.id)/approvals", token: t.key,
            json: #"{"username":"\#(username)","level":"ESSENTIAL","action":"login","resource":"web","text":"Sign in to Example?","numberMatching":true}"#)
        try #require(created.status == 201, "\(created.text)")
        let id = try #require(try created.json()["approvalId"] as? String)
        let hash = try #require(try created.json()["detailsHash"] as? String)
        let number = try #require(try created.json()["number"] as? Int)

        // The push: APNs headers, the approval id and the text, nothing else.
        var push: [String: Any]?
        #expect(await TestStack.eventually(timeout: .seconds(20)) { push = Self.push(for: id); return push != nil })
        let headers = push?["headers"] as? [String: Any]
        #expect(push?["api"] as? String == "apns" && push?["token"] as? String == phone.pushToken)
        #expect(headers?["apns-topic"] as? String == "com.example.bank" && headers?["apns-push-type"] as? String == "alert")
        #expect(headers?["apns-collapse-id"] as? String == id && headers?["apns-priority"] as? String == "10" && headers?["apns-expiration"] != nil)
        let payload = try #require(push?["payload"] as? [String: Any])
        #expect(Set(payload.keys) == ["aps", "approvalId"] && payload["approvalId"] as? String == id)
        let text = String(data: try JSONSerialization.data(withJSONObject: payload), encoding: .utf8) ?? ""
        #expect(text.contains("Sign in to Example?") && !text.contains(username) && !text.contains("number"))

        // The phone finds it pending and accepts with the user-auth key and the number, while
        // the RP waits.
        let poll = Task { try await TestHTTP.send("GET", "\(Self.oob)/v1/tenants/\(t.id)/approvals/\(id)?waitSeconds=8", headers: ["Authorization": "Bearer \(t.key)"]) }
        let pending = try await Self.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/approvals?status=pending")
        #expect(pending.text.contains(id), "\(pending.text)")
        let decision = try phone.decision("ACCEPT", approvalId: id, detailsHash: hash, number: number, withUserAuthKey: true)
        let accepted = try await Self.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(id)/decision", json: decision)
        #expect(accepted.status == 200, "\(accepted.text)")
        let seen = try await poll.value
        #expect(try seen.json()["status"] as? String == "ACCEPTED", "\(seen.text)")
        // Twice is refused with its own code.
        let again = try await Self.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(id)/decision", json: decision)
        #expect(again.status == 409)
        #expect(try again.json()["code"] as? String == "approval_already_accepted")
    }

    @Test func androidGetsFCMAndATokenReportedGoneIsNotUsedAgain() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "android")
        _ = try await Self.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        func ask() async throws -> String {
            let r = try await TestHTTP.json(
                "POST", "\(Self.oob)/v1/tenants/\(t.id)/approvals", token: t.key,
                json: #"{"username":"\#(username)","level":"ENTRY","action":"login","resource":"web"}"#)
            try #require(r.status == 201, "\(r.text)")
            return try #require(try r.json()["approvalId"] as? String)
        }
        let first = try await ask()
        var push: [String: Any]?
        #expect(await TestStack.eventually(timeout: .seconds(20)) { push = Self.push(for: first); return push != nil })
        #expect(push?["api"] as? String == "fcm" && push?["token"] as? String == phone.pushToken)
        let message = (push?["payload"] as? [String: Any])?["message"] as? [String: Any]
        #expect((message?["data"] as? [String: String])?["approvalId"] == first)

        // The provider says the token is gone: it is marked invalid, and not used again.
        let gone = "\(TestStack.dataDir)/sinks/push/gone-tokens"
        let listed = (try? String(contentsOfFile: gone, encoding: .utf8)) ?? ""
        try (listed + phone.pushToken + "\n").write(toFile: gone, atomically: true, encoding: .utf8)
        let second = try await ask()
        // Its only push could not be delivered: the approval is FAILED (push_failed), and the
        // RP's long poll sees it.
        let failed = try await TestHTTP.send(
            "GET", "\(Self.oob)/v1/tenants/\(t.id)/approvals/\(second)?waitSeconds=6", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(try failed.json()["status"] as? String == "FAILED" && failed.json()["reason"] as? String == "push_failed", "\(failed.text)")
        let list = "\(Self.oob)/v1/tenants/\(t.id)/users/\(username)/devices"
        #expect(await TestStack.eventually(timeout: .seconds(20)) {
            let r = try? await TestHTTP.send("GET", list, headers: ["Authorization": "Bearer \(t.key)"])
            return ((try? r?.json())?["devices"] as? [[String: Any]])?.first?["pushEnabled"] as? Bool == false
        })
        let third = try await ask()
        try await Task.sleep(for: .seconds(2))
        #expect(Self.push(for: third) == nil)
        // No push was queued for it (no usable token): it stays answerable from the pending list.
        let stays = try await TestHTTP.send("GET", "\(Self.oob)/v1/tenants/\(t.id)/approvals/\(third)", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(try stays.json()["status"] as? String == "IN_PROGRESS", "\(stays.text)")
    }

    /// `oob_push` in an adaptive sign-in: the challenge pushes an approval with a number, the
    /// page polls verify (409 approval_pending), the phone accepts with the number, and verify
    /// completes the sign-in with a session token whose amr is oob_push.
    @Test func anAdaptiveSignInIsCompletedByOOBPush() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await Self.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "push", "action": "TRIGGER_AUTHENTICATION", "sequences": [["oob_push"]]}]}"#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.sequences == [["oob_push"]] })
        let signin = try await adaptive.start(t, username: username)
        let base = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(signin.signinId)/methods/oob_push"
        let challenge = try await TestHTTP.json("POST", "\(base)/challenge", json: "{}")
        try #require(challenge.status == 200, "\(challenge.text)")
        let approvalId = try #require(try challenge.json()["approvalId"] as? String)
        let number = try #require(try challenge.json()["number"] as? Int)
        let pending = try await TestHTTP.json("POST", "\(base)/verify", json: "{}")
        #expect(pending.status == 409, "\(pending.text)")
        #expect(try pending.json()["code"] as? String == "approval_pending")

        #expect(await TestStack.eventually(timeout: .seconds(20)) { Self.push(for: approvalId) != nil })
        let shown = try await Self.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(approvalId)")
        let hash = try #require(try shown.json()["detailsHash"] as? String)
        let accepted = try await Self.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(approvalId)/decision",
            json: try phone.decision("ACCEPT", approvalId: approvalId, detailsHash: hash, number: number))
        #expect(accepted.status == 200, "\(accepted.text)")
        let done = try await TestHTTP.json("POST", "\(base)/verify", json: "{}")
        #expect(done.status == 200, "\(done.text)")
        let progress = try done.json()
        #expect(progress["status"] as? String == "SUCCEEDED" && progress["sessionToken"] != nil, "\(done.text)")
        #expect(progress["completedMethods"] as? [String] == ["oob_push"])

        // A rejected push refuses the step (and counts as a failure).
        let second = try await adaptive.start(t, username: username)
        let base2 = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(second.signinId)/methods/oob_push"
        let c2 = try await TestHTTP.json("POST", "\(base2)/challenge", json: "{}")
        let id2 = try #require(try c2.json()["approvalId"] as? String)
        let shown2 = try await Self.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(id2)")
        _ = try await Self.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(id2)/decision",
            json: try phone.decision("REJECT", approvalId: id2, detailsHash: try #require(try shown2.json()["detailsHash"] as? String)))
        let refused = try await TestHTTP.json("POST", "\(base2)/verify", json: "{}")
        #expect(refused.status == 400, "\(refused.text)")
        #expect(try refused.json()["code"] as? String == "oob_push_rejected")
    }

    /// A transaction confirmed by push (#16): a rule about transactions may offer `oob_push`
    /// alone (it signs the details); the challenge pushes an ESSENTIAL approval that carries the
    /// transaction's text, amount, payee and details hash; the phone recomputes the details hash
    /// it signs, accepts with its user-auth key and the number; the transaction service verifies
    /// that signature with its own record of the device's key and issues the tcToken, which the
    /// RP verifies online and with the JWKS alone. A decision signed with the device key (no
    /// user presence) is refused for such an approval.
    @Test func aTransactionIsConfirmedByPushAndTheRPVerifiesTheTCToken() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await waitForOOBKey(t)
        let transactions = TransactionStackTests()
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await Self.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        let ruleset = #"""
            {"rules": [{"name": "payments", "when": {"fact": "context.transactionAmount", "op": "gt", "value": 0},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["oob_push"]]},
              {"name": "rest", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}]}
            """#
        let saved = try await adaptive.putRuleset(t, ruleset)
        #expect(saved.status == 200, "\(saved.text)")

        let tx = try await transactions.create(t, username: username, amount: "385.00")
        var started: SignInStarted?
        #expect(await TestStack.eventually {
            started = try? AdaptiveSignInStackTests.decode(SignInStarted.self, try await transactions.startConfirmation(t, tx.transactionId))
            return started?.sequences == [["oob_push"]]
        })
        let signin = try #require(started)
        let base = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(signin.signinId)/methods/oob_push"
        let challenge = try await TestHTTP.json("POST", "\(base)/challenge", json: "{}")
        try #require(challenge.status == 200, "\(challenge.text)")
        let approvalId = try #require(try challenge.json()["approvalId"] as? String)
        let number = try #require(try challenge.json()["number"] as? Int)

        // What the phone is shown: the transaction, and a details hash it can recompute.
        #expect(await TestStack.eventually(timeout: .seconds(20)) { Self.push(for: approvalId) != nil })
        let shown = try await Self.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(approvalId)")
        let approval = try AdaptiveSignInStackTests.decode(DeviceApproval.self, shown)
        #expect(approval.level == "ESSENTIAL" && approval.action == "confirm_transaction" && approval.resource == tx.transactionId, "\(shown.text)")
        #expect(approval.text == tx.details.text && approval.transactionHash == tx.detailsHash)
        #expect(approval.customFields == ["amount": "385.00", "currency": "EUR", "payee": "ACME Ltd"])
        let details = ApprovalDetails(
            level: approval.level, action: approval.action, resource: approval.resource, text: approval.text, customFields: approval.customFields,
            transactionHash: approval.transactionHash)
        #expect(approval.detailsHash == Base64URL.encode(SHA256.hash(Array(details.canonicalJSON.utf8))))

        // The device key alone is not enough for a transaction.
        let weak = try await Self.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(approvalId)/decision",
            json: try phone.decision("ACCEPT", approvalId: approvalId, detailsHash: approval.detailsHash, number: number))
        #expect(weak.status == 400 && (try? weak.json()["code"] as? String) == "approval_signature_invalid", "\(weak.text)")
        let accepted = try await Self.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(approvalId)/decision",
            json: try phone.decision("ACCEPT", approvalId: approvalId, detailsHash: approval.detailsHash, number: number, withUserAuthKey: true))
        #expect(accepted.status == 200, "\(accepted.text)")
        let done = try await TestHTTP.json("POST", "\(base)/verify", json: "{}")
        #expect(done.status == 200, "\(done.text)")
        let result = try AdaptiveSignInStackTests.decode(SignInProgress.self, done)
        #expect(result.status == "SUCCEEDED" && result.completedMethods == ["oob_push"], "\(done.text)")

        var confirmed: TransactionResource?
        #expect(await TestStack.eventually(timeout: .seconds(20)) {
            confirmed = try? await transactions.get(t, tx.transactionId)
            return confirmed?.status == "CONFIRMED"
        })
        let token = try #require(confirmed?.tcToken)
        #expect(try await transactions.verifyToken(t, tx.transactionId, token) == TCTokenVerifyResult(valid: true, alreadyConsumed: false))
        let jwks = try await TestHTTP.send("GET", "\(TransactionStackTests.transaction)/v1/tenants/\(t.id)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/transaction", audience: t.id))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.claims.subject == username && jwt.claims[claim: "txn"] == .string(tx.transactionId))
        #expect(jwt.claims[claim: "txn_hash"] == .string(tx.detailsHash) && jwt.claims[claim: "amr"] == .array(["oob_push"]))
        #expect(jwt.claims[claim: "cid"] == .string(device))
        // The evidence keeps the device's signature.
        let evidence = try await TestHTTP.send(
            "GET", "\(TransactionStackTests.transaction)/v1/tenants/\(t.id)/transactions/\(tx.transactionId)/evidence", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(evidence.status == 200 && evidence.text.contains(#""format":"oob_push""#), "\(evidence.text)")
    }

    /// Devices in rules (#16): the authentication service learns a user's bound devices from the
    /// oob service's events; a rule offers `oob_push` only while the user has an active device,
    /// and the RP's unbinding takes it away again.
    @Test func aRuleOffersPushOnlyWhileTheUserHasABoundDevice() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let ruleset = #"""
            {"rules": [
              {"name": "insecure", "when": {"fact": "device.securityEnabled", "op": "eq", "value": false}, "action": "DENY"},
              {"name": "push", "when": {"fact": "user.devices.active", "op": "eq", "value": true}, "action": "TRIGGER_AUTHENTICATION", "sequences": [["oob_push"]]},
              {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}]}
            """#
        let saved = try await adaptive.putRuleset(t, ruleset)
        #expect(saved.status == 200, "\(saved.text)")
        func rule(signals: String = #"{}"#) async throws -> String? {
            let r = try await TestHTTP.json(
                "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins",
                json: #"{"username":"\#(username)","signals":\#(signals)}"#)
            return try r.json()["matchedRule"] as? String
        }
        // The ruleset is in force once the first start sees it.
        #expect(await TestStack.eventually { (try? await rule()) == "passkey" })

        let phone = try SoftwareDevice(platform: "ios")
        let device = try await Self.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await rule()) == "push" })
        // From that device, with its security on: still push.
        #expect(try await rule(signals: #"{"deviceId":"\#(device)"}"#) == "push")

        // The phone's passcode is removed (no user-auth key): rules see device.securityEnabled false.
        let updated = try await Self.device(phone, "POST", "/v1/tenants/\(t.id)/devices", json: try phone.upsertBody(security: false, appId: "com.example.bank"))
        #expect(updated.status == 200, "\(updated.text)")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await rule(signals: #"{"deviceId":"\#(device)"}"#)) == "insecure" })

        // Unbound by the RP: no device, no push.
        let unbound = try await TestHTTP.send(
            "DELETE", "\(Self.oob)/v1/tenants/\(t.id)/users/\(username)/devices/\(device)", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unbound.status == 200 || unbound.status == 204, "\(unbound.text)")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await rule()) == "passkey" })
    }
}
