import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport

/// Sign-in outside a flow's steps against the user's standing: quick authentication's failures
/// counted towards it.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct DirectSignInStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    let adaptive = AdaptiveSignInStackTests()

    func settings(_ t: Adaptive.Tenant, _ json: String) async throws {
        let put = try await TestHTTP.json(
            "PUT", "\(Adaptive.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken, json: json)
        #expect(put.status == 200, "\(put.text)")
    }

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

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
