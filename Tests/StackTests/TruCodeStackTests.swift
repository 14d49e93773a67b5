import Foundation
import Schema
import Testing
import TestSupport

/// TruCodes (#17) through the running stack, both sides played: the login page's RP asks for a
/// code and polls it; a software phone bound to the user (security enabled) scans the payload
/// and pairs it; the RP's approval request names the code instead of a username and reaches
/// that phone. Reuse, another tenant's phone, an approval before pairing and expiry are refused.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct TruCodeStackTests {
    static let oob = OOBApprovalStackTests.oob
    let adaptive = AdaptiveSignInStackTests()
    let approvals = OOBApprovalStackTests()

    func create(_ t: AdaptiveSignInStackTests.Tenant, seconds: Int = 120) async throws -> (id: String, payload: String) {
        let r = try await TestHTTP.json("POST", "\(Self.oob)/v1/tenants/\(t.id)/trucodes", token: t.key, json: #"{"expiresInSeconds":\#(seconds)}"#)
        try #require(r.status == 201, "\(r.text)")
        let payload = try #require(r.fields["payload"] as? String)
        #expect(Data(base64Encoded: try #require(r.fields["qrCodePng"] as? String)).map { Array($0.prefix(4)) } == [0x89, 0x50, 0x4E, 0x47])
        return (try #require(r.fields["truCodeId"] as? String), payload)
    }

    func poll(_ t: AdaptiveSignInStackTests.Tenant, _ id: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send("GET", "\(Self.oob)/v1/tenants/\(t.id)/trucodes/\(id)", headers: ["Authorization": "Bearer \(t.key)"])
    }

    /// The phone scans the payload and pairs the code it names.
    func pair(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, payload: String) async throws -> TestHTTP.Response {
        let id = try #require(TruCodeID.id(in: payload))
        return try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/trucodes/\(id)/pair", json: "{}")
    }

    func approve(_ t: AdaptiveSignInStackTests.Tenant, _ id: String, _ json: String) async throws -> TestHTTP.Response {
        try await TestHTTP.json("POST", "\(Self.oob)/v1/tenants/\(t.id)/trucodes/\(id)/approvals", token: t.key, json: json)
    }

    @Test func aPairedCodeLetsThePageAskThePhoneWithoutAUsername() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await approvals.waitForOOBKey(t)
        let username = "tc-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await OOBApprovalStackTests.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        // A code left to expire while the rest runs.
        let short = try await create(t, seconds: 30)
        let started = ContinuousClock.now

        let code = try await create(t)
        #expect(code.payload == "signet://trucode/\(code.id)")
        let pending = try await poll(t, code.id)
        #expect(pending.fields["status"] as? String == "PENDING" && pending.fields["username"] == nil, "\(pending.text)")
        let early = try await approve(t, code.id, #"{"level":"ENTRY","action":"login","resource":"web"}"#)
        #expect(early.status == 409 && early.fields["code"] as? String == "trucode_not_paired", "\(early.text)")

        // Another tenant's phone cannot pair it.
        let other = try await adaptive.tenant()
        await approvals.waitForOOBKey(other)
        let stranger = try SoftwareDevice(platform: "android")
        let strangerDevice = try await OOBApprovalStackTests.enrol(stranger, as: username, tenant: other, appId: "com.example.bank")
        let crossed = try await pair(stranger, strangerDevice, other, payload: code.payload)
        #expect(crossed.status == 403 && crossed.fields["code"] as? String == "trucode_other_tenant", "\(crossed.text)")

        // The user's phone pairs it, once; it is not told the username.
        let paired = try await pair(phone, device, t, payload: code.payload)
        #expect(paired.status == 200 && paired.fields["status"] as? String == "PAIRED" && paired.fields["username"] == nil, "\(paired.text)")
        let again = try await pair(phone, device, t, payload: code.payload)
        #expect(again.status == 409 && again.fields["code"] as? String == "trucode_already_used", "\(again.text)")
        // The page's RP learns who.
        let seen = try await poll(t, code.id)
        #expect(seen.fields["status"] as? String == "PAIRED" && seen.fields["username"] as? String == username && seen.fields["deviceId"] as? String == device, "\(seen.text)")

        // The approval names the code, not the user; a body naming a user is refused (the code stays).
        let named = try await approve(t, code.id, #"{"username":"\#(username)","level":"ENTRY","action":"login","resource":"web"}"#)
        #expect(named.status == 400 && named.fields["code"] as? String == "invalid_field", "\(named.text)")
        let bad = try await approve(t, code.id, #"{"level":"SUPREME","action":"login","resource":"web"}"#)
        #expect(bad.status == 400 && bad.fields["field"] as? String == "level", "\(bad.text)")
        // The RP's own text needs the tenant's leave (push templates otherwise); a refusal gives
        // the code back, so the same code is used once allowed.
        let textRefused = try await approve(t, code.id, #"{"level":"ENTRY","action":"login","resource":"web","text":"Sign in on the desktop?"}"#)
        #expect(textRefused.status == 403 && textRefused.fields["code"] as? String == "dynamic_text_not_allowed", "\(textRefused.text)")
        try await OOBApprovalStackTests.allowDynamicText(t)
        let asked = try await approve(t, code.id, #"{"level":"ENTRY","action":"login","resource":"web","text":"Sign in on the desktop?"}"#)
        #expect(asked.status == 201 && asked.fields["username"] as? String == username && asked.fields["deviceId"] as? String == device, "\(asked.text)")
        let approvalId = try #require(asked.fields["approvalId"] as? String)
        let list = try await OOBApprovalStackTests.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/approvals?status=pending")
        #expect(list.text.contains(approvalId), "\(list.text)")
        // Used up.
        let twice = try await approve(t, code.id, #"{"level":"ENTRY","action":"login","resource":"web"}"#)
        #expect(twice.status == 409 && twice.fields["code"] as? String == "trucode_already_used", "\(twice.text)")
        #expect(try await poll(t, code.id).fields["status"] as? String == "USED")

        // Expiry: the short code, scanned too late.
        try await Task.sleep(until: started + .seconds(31), clock: .continuous)
        let late = try await pair(phone, device, t, payload: short.payload)
        #expect(late.status == 410 && late.fields["code"] as? String == "trucode_expired", "\(late.text)")
        #expect(try await poll(t, short.id).fields["status"] as? String == "EXPIRED")
        // An unknown code.
        let unknown = try await pair(phone, device, t, payload: "tc_00000000000000000000000000000000")
        #expect(unknown.status == 404 && unknown.fields["code"] as? String == "trucode_not_found", "\(unknown.text)")
    }
}

private extension TestHTTP.Response {
    var fields: [String: Any] { (try? json()) ?? [:] }
}
