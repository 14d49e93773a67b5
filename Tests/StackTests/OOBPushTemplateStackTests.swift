import Foundation
import Testing
import TestSupport

/// Approval push text through the running stack: the tenant's push template in the approval's
/// locale reaches the push sink, and the RP's own text is refused until the tenant allows
/// dynamic text, then carried as is.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct OOBPushTemplateStackTests {
    typealias OOB = OOBApprovalStackTests
    let adaptive = AdaptiveSignInStackTests()

    /// The alert body of the APNs push the sink recorded for `approvalId`.
    func pushedText(_ approvalId: String) async -> String? {
        var push: [String: Any]?
        _ = await TestStack.eventually(timeout: .seconds(20)) { push = OOB.push(for: approvalId); return push != nil }
        let aps = (push?["payload"] as? [String: Any])?["aps"] as? [String: Any]
        return (aps?["alert"] as? [String: Any])?["body"] as? String
    }

    @Test func thePushCarriesTheTemplateOfTheLocaleOrTheAllowedDynamicText() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await OOB().waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        _ = try await OOB.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        for (locale, text) in [("fr", "Approuver {{action}} sur {{resource}} ({{level}}) ?"), ("en", "Approve {{action}} on {{resource}}?")] {
            let r = try await TestHTTP.json(
                "PUT", "\(OOB.oob)/v1/admin/tenants/\(t.id)/templates/push/\(locale)", token: TestStack.adminToken, json: #"{"text":"\#(text)"}"#)
            try #require(r.status == 200, "\(r.text)")
        }
        func ask(_ extra: String) async throws -> TestHTTP.Response {
            try await TestHTTP.json(
                "POST", "\(OOB.oob)/v1/tenants/\(t.id)/approvals", token: t.key,
                json: #"{"username":"\#(username)","level":"ENTRY","action":"login","resource":"web"\#(extra)}"#)
        }
        // The template of the request's locale (fr-CA → fr), and English without one.
        let french = try await ask(#","locale":"fr-CA""#)
        try #require(french.status == 201, "\(french.text)")
        #expect(await pushedText(try #require(try french.json()["approvalId"] as? String)) == "Approuver login sur web (ENTRY) ?")
        let english = try await ask("")
        try #require(english.status == 201, "\(english.text)")
        #expect(await pushedText(try #require(try english.json()["approvalId"] as? String)) == "Approve login on web?")

        // Dynamic text: refused with its code until the tenant allows it, then pushed as given.
        let refused = try await ask(#","text":"Sign in to Example?""#)
        let refusedCode = try refused.json()["code"] as? String
        #expect(refused.status == 403 && refusedCode == "dynamic_text_not_allowed", "\(refused.text)")
        try await OOB.allowDynamicText(t)
        let dynamic = try await ask(#","text":"Sign in to Example?","locale":"fr""#)
        try #require(dynamic.status == 201, "\(dynamic.text)")
        #expect(await pushedText(try #require(try dynamic.json()["approvalId"] as? String)) == "Sign in to Example?")
    }
}
