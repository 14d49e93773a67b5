import Crypto
import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// Rulesets name only the service's methods, and a sign-in for a transaction offers only
/// sequences that can confirm it: in process, over a scratch database.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct RulesetMethodsAndTransactionTests {
    static let key = "sk_harness_0123456789abcdefghijklmnopqrstuv"
    static let admin = ServiceHarness<AuthenticationService>.adminToken

    static func problem(_ response: HTTPResponse) -> (code: String?, field: String?, detail: String?) {
        let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (json?["code"] as? String, json?["field"] as? String, json?["detail"] as? String)
    }

    @Test func aRulesetNamingAnUnknownMethodIsRefusedWhenSaved() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: Self.key)
        let typo = #"{"rules": [{"name": "r", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "smsotp"]]}]}"#
        let refused = await h.send("PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Self.admin, json: typo)
        #expect(refused.status == 400)
        let p = Self.problem(refused)
        #expect(p.code == "invalid_ruleset" && p.field == "rules[0].sequences[0][1]", "\(p)")
        #expect(p.detail?.contains("unknown_method") == true, "\(p)")
        let registration = #"{"rules": [{"name": "r", "action": "SUGGEST_REGISTRATION", "methods": ["external_jwt"]}]}"#
        let refusedRegistration = await h.send("PUT", "/v1/admin/tenants/acme/rulesets/registration", bearer: Self.admin, json: registration)
        #expect(refusedRegistration.status == 400 && Self.problem(refusedRegistration).detail?.contains("unknown_method") == true)
        // Nothing was stored or published.
        #expect(try await h.published().isEmpty)
        let fine = #"{"rules": [{"name": "r", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"], ["totp"]]}]}"#
        #expect(await h.send("PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Self.admin, json: fine).status == 200)
    }

    @Test func aRuleAboutTransactionsWithACodeOnlySequenceIsRefusedWhenSaved() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: Self.key)
        let ruleset = #"""
            {"rules": [{"name": "payments", "when": {"fact": "context.transactionAmount", "op": "gt", "value": 100},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], ["sms_otp"]]}]}
            """#
        let refused = await h.send("PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Self.admin, json: ruleset)
        let p = Self.problem(refused)
        #expect(refused.status == 400 && p.code == "invalid_ruleset" && p.field == "rules[0].sequences[1]", "\(p)")
        #expect(p.detail?.contains("sequence_cannot_confirm") == true, "\(p)")
    }

    @Test func aSignInForATransactionWhoseRuleOffersOnlyCodesIsRefusedUpFront() async throws {
        let h = try await ServiceHarness<AuthenticationService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: Self.key)
        // A rule that does not mention transactions (so it is accepted) but matches one.
        let ruleset = #"{"rules": [{"name": "codes", "action": "TRIGGER_AUTHENTICATION", "sequences": [["sms_otp"]]}]}"#
        #expect(await h.send("PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Self.admin, json: ruleset).status == 200)
        let details = TransactionDetails(text: "Pay €10 to ACME", amount: "10.00", currency: "EUR", payee: "ACME")
        let id = "tx_" + String(repeating: "ab", count: 16)
        try await h.consume(
            TransactionChanged(
                tenantId: "acme", transactionId: id, revision: 1, status: "PENDING",
                subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), details: details,
                detailsHash: Base64URL.encode(SHA256.hash(Array(details.canonicalJSON.utf8))), expiresAt: Date().addingTimeInterval(300),
                changedAt: Date()),
            source: .transaction)
        let started = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"username":"alice","context":{"transactionId":"\#(id)"}}"#)
        #expect(started.status == 409 && Self.problem(started).code == "transaction_not_confirmable", "\(String(decoding: started.body, as: UTF8.self))")
        // The same rule without a transaction still offers the code.
        let plain = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"username":"alice"}"#)
        #expect(plain.status == 201, "\(String(decoding: plain.body, as: UTF8.self))")
    }
}
