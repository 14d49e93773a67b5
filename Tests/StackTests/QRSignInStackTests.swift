import Crypto
import Foundation
import Schema
import Testing
import TestSupport
import Tokens

/// Cross-device sign-in by QR code through the running stack, both sides played: the desktop
/// page (the adaptive sign-in's `qr` step on the authentication service, the session's status
/// watched through the gateway by Server-Sent Events and long polling with the watch token) and
/// a software phone bound to the user (claims the code it "scanned" from the payload and
/// accepts with its device key). The desktop gets the session; the phone does not. Reuse,
/// another tenant's phone, rejection and expiry are refused.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct QRSignInStackTests {
    static let oob = OOBApprovalStackTests.oob
    static let gateway = "http://127.0.0.1:8080"
    let adaptive = AdaptiveSignInStackTests()
    let approvals = OOBApprovalStackTests()

    struct Shown {
        let id: String
        let payload: String
        let watch: String
        let png: String
        var expiresAt: String?
    }

    /// The page asks the sign-in's `qr` step for its code.
    func challenge(_ t: AdaptiveSignInStackTests.Tenant, _ signinId: String) async throws -> Shown {
        let r = try await TestHTTP.json("POST", "\(Self.methods(t, signinId))/challenge", json: "{}")
        try #require(r.status == 200, "\(r.text)")
        let o = try r.json()
        return Shown(
            id: try #require(o["qrSessionId"] as? String), payload: try #require(o["qrPayload"] as? String), watch: try #require(o["watchToken"] as? String),
            png: try #require(o["qrCodePng"] as? String), expiresAt: o["expiresAt"] as? String)
    }

    static func methods(_ t: AdaptiveSignInStackTests.Tenant, _ signinId: String) -> String {
        "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(signinId)/methods/qr"
    }

    func verify(_ t: AdaptiveSignInStackTests.Tenant, _ signinId: String, query: String = "") async throws -> TestHTTP.Response {
        try await TestHTTP.json("POST", "\(Self.methods(t, signinId))/verify\(query)", json: "{}")
    }

    /// The page's view of the session through the gateway, by its watch token.
    func watch(_ t: AdaptiveSignInStackTests.Tenant, _ s: Shown, query: String = "", headers: [String: String] = [:]) async throws -> TestHTTP.Response {
        try await TestHTTP.send("GET", "\(Self.gateway)/oob/v1/tenants/\(t.id)/qr-sessions/\(s.id)?watchToken=\(s.watch)\(query)", headers: headers)
    }

    /// The phone scans: it reads the session id from the payload and claims it.
    func scan(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, payload: String) async throws -> TestHTTP.Response {
        let id = try #require(QRPayloadType.sessionId(in: payload))
        return try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(id)/claim", json: "{}")
    }

    func answer(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, _ s: Shown, _ decision: String) async throws
        -> TestHTTP.Response
    {
        try await OOBApprovalStackTests.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(s.id)/decision", json: try phone.qrDecision(decision, qrSessionId: s.id))
    }

    func subject(of token: String, tenant: String) async throws -> String? {
        let jwks = try await TestHTTP.send("GET", "\(AdaptiveSignInStackTests.authentication)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: tenant))
        return try verifier.verify(token, now: Date()).claims.subject
    }

    @Test func thePhoneCompletesTheDesktopsAdaptiveSignIn() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await approvals.waitForOOBKey(t)
        let username = "qr-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await OOBApprovalStackTests.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "qr", "action": "TRIGGER_AUTHENTICATION", "sequences": [["qr"]]}]}"#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.sequences == [["qr"]] })

        // An app that says it cannot scan is offered no qr step (here: none left, FAILED).
        let noScan = try await TestHTTP.json(
            "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins",
            json: #"{"username":"\#(username)","signals":{"qrSupported":false}}"#)
        #expect(noScan.status == 201 && noScan.fields["status"] as? String == "FAILED" && (noScan.fields["sequences"] as? [Any])?.isEmpty == true, "\(noScan.text)")

        let signin = try await adaptive.start(t, username: username)
        // A page may ask for a shorter-lived code (30-120 s), nothing else.
        for asked in [#"{"expiresInSeconds":29}"#, #"{"expiresInSeconds":121}"#, #"{"expiresInSeconds":"30"}"#] {
            let refused = try await TestHTTP.json("POST", "\(Self.methods(t, signin.signinId))/challenge", json: asked)
            #expect(refused.status == 400 && ["invalid_field", "malformed_json"].contains(refused.fields["code"] as? String ?? ""), "\(asked): \(refused.text)")
        }
        let shortLived = try await TestHTTP.json("POST", "\(Self.methods(t, signin.signinId))/challenge", json: #"{"expiresInSeconds":30}"#)
        let shortExpiry = try #require(shortLived.fields["expiresAt"] as? String, "\(shortLived.text)")
        let shown = try await challenge(t, signin.signinId)
        // A new challenge replaces the code; the default lifetime is the longer one.
        #expect(try #require(shown.expiresAt) > shortExpiry)
        // The tenant's only origin is http://localhost:8080: the universal link is on it, and
        // carries the session id only.
        #expect(shown.payload == "http://localhost:8080/qr/\(shown.id)" && !shown.payload.contains(username))
        #expect(Data(base64Encoded: shown.png).map { Array($0.prefix(4)) } == [0x89, 0x50, 0x4E, 0x47])
        let pending = try await verify(t, signin.signinId)
        #expect(pending.status == 409 && (pending.fields["code"] as? String) == "qr_pending", "\(pending.text)")

        // The watch token as a bearer reads the session as the query parameter does; another
        // 32-byte bearer is no watch token and no API key.
        let viewURL = "\(Self.gateway)/oob/v1/tenants/\(t.id)/qr-sessions/\(shown.id)"
        let byHeader = try await TestHTTP.send("GET", viewURL, headers: ["Authorization": "Bearer \(shown.watch)"])
        #expect(byHeader.status == 200 && byHeader.text.contains(#""status":"PENDING""#), "\(byHeader.text)")
        let wrong = Base64URL.encode([UInt8](repeating: 7, count: 32))
        #expect(try await TestHTTP.send("GET", viewURL, headers: ["Authorization": "Bearer \(wrong)"]).status == 401)
        // The page's EventSource, through the gateway: the first event at once.
        let sse = ["Accept": "text/event-stream"]
        let first = try await watch(t, shown, headers: sse)
        #expect(first.status == 200 && first.headers["content-type"]?.hasPrefix("text/event-stream") == true, "\(first.text)")
        #expect(first.text.contains("id: 1\n") && first.text.contains(#""status":"PENDING""#) && !first.text.contains(username), "\(first.text)")
        // Its reconnection is held until the phone scans.
        let next = Task { try await watch(t, shown, headers: sse.merging(["Last-Event-ID": "1"]) { $1 }) }
        try await Task.sleep(for: .milliseconds(500))
        let claimed = try await scan(phone, device, t, payload: shown.payload)
        #expect(claimed.status == 200 && (claimed.fields["purpose"] as? String) == "authenticate", "\(claimed.text)")
        let scannedEvent = try await next.value
        #expect(scannedEvent.text.contains("id: 2\n") && scannedEvent.text.contains(#""status":"SCANNED""#), "\(scannedEvent.text)")
        #expect(try await verify(t, signin.signinId).status == 409)

        // Long polling from the last revision seen, woken by the phone's answer.
        let poll = Task { try await watch(t, shown, query: "&waitSeconds=6&sinceRevision=2") }
        try await Task.sleep(for: .milliseconds(500))
        let accepted = try await answer(phone, device, t, shown, "ACCEPT")
        #expect(accepted.status == 200 && (accepted.fields["status"] as? String) == "SUCCEEDED", "\(accepted.text)")
        // The phone is told the outcome, never given the session.
        #expect(!accepted.text.contains("sessionToken") && !accepted.text.contains("eyJ"))
        let polled = try await poll.value
        #expect((polled.fields["status"] as? String) == "SUCCEEDED" && (polled.fields["username"]) == nil, "\(polled.text)")

        // The desktop's sign-in completes with a session for the phone's user.
        let done = try await verify(t, signin.signinId)
        #expect(done.status == 200, "\(done.text)")
        let progress = try done.json()
        #expect(progress["status"] as? String == "SUCCEEDED" && progress["completedMethods"] as? [String] == ["qr"], "\(done.text)")
        let token = try #require(progress["sessionToken"] as? String)
        #expect(try await subject(of: token, tenant: t.id) == username)
        #expect((progress["refreshToken"] as? String)?.hasPrefix("rt_") == true, "\(done.text)")

        // The code is single-use; the finished stream ends (204).
        let again = try await scan(phone, device, t, payload: shown.payload)
        #expect(again.status == 409 && (again.fields["code"] as? String) == "qr_session_already_used", "\(again.text)")
        #expect(try await watch(t, shown, headers: sse.merging(["Last-Event-ID": "3"]) { $1 }).status == 204)
    }

    @Test func aSignInWithoutUsernameLearnsTheUserFromThePhoneAndRefusalsHold() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await approvals.waitForOOBKey(t)
        let username = "qr-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "android")
        let device = try await OOBApprovalStackTests.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "qr", "action": "TRIGGER_AUTHENTICATION", "sequences": [["qr"]]}]}"#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: nil))?.sequences == [["qr"]] })

        // No username typed on the desktop: the phone's user signs in.
        let anonymous = try await adaptive.start(t, username: nil)
        let shown = try await challenge(t, anonymous.signinId)
        #expect(try await scan(phone, device, t, payload: shown.payload).status == 200)
        #expect(try await answer(phone, device, t, shown, "ACCEPT").status == 200)
        // A page that would only keep a refresh token in its memory asks for none (as the demo's
        // gateway route does); anything but true or false is refused before the step is used.
        let unclear = try await verify(t, anonymous.signinId, query: "?refreshToken=no")
        #expect(unclear.status == 400 && (unclear.fields["field"] as? String) == "refreshToken", "\(unclear.text)")
        let done = try await verify(t, anonymous.signinId, query: "?refreshToken=false")
        let token = try #require(done.fields["sessionToken"] as? String, "\(done.text)")
        #expect(try await subject(of: token, tenant: t.id) == username)
        #expect(done.fields["refreshToken"] == nil && !done.text.contains("rt_"), "\(done.text)")

        // Rejected on the phone: the step is refused.
        let second = try await adaptive.start(t, username: username)
        let rejected = try await challenge(t, second.signinId)
        #expect(try await scan(phone, device, t, payload: rejected.payload).status == 200)
        #expect(try await answer(phone, device, t, rejected, "REJECT").status == 200)
        let refused = try await verify(t, second.signinId)
        #expect(refused.status == 400 && (refused.fields["code"] as? String) == "qr_sign_in_failed", "\(refused.text)")

        // Another tenant's phone, bound there to a user of the same name, scans this tenant's code.
        let other = try await adaptive.tenant()
        await approvals.waitForOOBKey(other)
        let stranger = try SoftwareDevice(platform: "ios")
        let strangerDevice = try await OOBApprovalStackTests.enrol(stranger, as: username, tenant: other, appId: "com.example.bank")
        let third = try await adaptive.start(t, username: username)
        let shownThird = try await challenge(t, third.signinId)
        let crossed = try await scan(stranger, strangerDevice, other, payload: shownThird.payload)
        #expect(crossed.status == 403 && (crossed.fields["code"] as? String) == "qr_session_other_tenant", "\(crossed.text)")
        #expect(try await verify(t, third.signinId).status == 409)

        // Expiry: an RP's code of the shortest lifetime, scanned too late.
        let created = try await TestHTTP.json(
            "POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"authenticate","qrType":"compact","expiresInSeconds":30}"#)
        try #require(created.status == 201, "\(created.text)")
        let compact = try #require(created.fields["qrPayload"] as? String)
        try await Task.sleep(for: .seconds(31))
        let late = try await scan(phone, device, t, payload: compact)
        #expect(late.status == 410 && (late.fields["code"] as? String) == "qr_session_expired", "\(late.text)")
    }
}

private extension TestHTTP.Response {
    /// The body's members (none when it is not a JSON object).
    var fields: [String: Any] { (try? json()) ?? [:] }
}
