import Foundation
import Testing
import TestSupport

/// `oob_push` is offered only to a user with a bound, active device: the authentication
/// service's `user_devices` read model (from the oob service's device events) decides, so a
/// rule asking for it yields no sequence until a device is bound, and none again once the RP
/// unbinds it.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct OOBPushAvailabilityStackTests {
    typealias OOB = OOBApprovalStackTests
    let adaptive = AdaptiveSignInStackTests()

    @Test func oobPushIsOfferedOnlyWhileTheUserHasABoundDevice() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await OOB().waitForOOBKey(t)
        let username = "oob-\(UInt32.random(in: 0...UInt32.max))"
        let saved = try await adaptive.putRuleset(t, #"{"rules": [{"name": "push", "action": "TRIGGER_AUTHENTICATION", "sequences": [["oob_push"]]}]}"#)
        #expect(saved.status == 200, "\(saved.text)")
        /// The rule that matched and the sequences offered.
        func offered() async throws -> (rule: String?, sequences: [[String]]) {
            let r = try await TestHTTP.json(
                "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins", json: #"{"username":"\#(username)","signals":{}}"#)
            let o = try r.json()
            return (o["matchedRule"] as? String, (o["sequences"] as? [[String]]) ?? [])
        }
        // The ruleset is in force, and without a device the push sequence is removed.
        var first: (rule: String?, sequences: [[String]])?
        #expect(await TestStack.eventually { first = try? await offered(); return first?.rule == "push" })
        #expect(first?.sequences == [], "\(String(describing: first))")

        let phone = try SoftwareDevice(platform: "ios")
        let device = try await OOB.enrol(phone, as: username, tenant: t, appId: "com.example.bank")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await offered())?.sequences == [["oob_push"]] })

        let unbound = try await TestHTTP.send(
            "DELETE", "\(OOB.oob)/v1/tenants/\(t.id)/users/\(username)/devices/\(device)", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unbound.status == 200 || unbound.status == 204, "\(unbound.text)")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await offered())?.sequences == [] })
    }
}
