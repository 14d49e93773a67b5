import Foundation
import Schema
import Testing
import TestSupport

/// Registration decision rules that answer sequences of methods, as authentication rules do,
/// through the running services: the ruleset is refused when a sequence names a method users
/// cannot register, the suggestion (after a sign-in, and asked by the user's session) carries
/// the sequences in the rule's order, and the registration service offers the methods of those
/// sequences only. A rule stored in the older `methods` form still reads and echoes as stored.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct RegistrationSequencesStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    let adaptive = Adaptive()

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

    func putRegistrationRules(_ t: Adaptive.Tenant, _ json: String) async throws -> TestHTTP.Response {
        try await TestHTTP.json(
            "PUT", "\(Adaptive.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration", token: TestStack.adminToken, json: json)
    }

    @Test func registrationRulesOfferSequencesAndRefuseUnknownMethods() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "seq-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await adaptive.register(username, in: t)

        // A method users cannot register, anywhere in a sequence, is refused with its path.
        let unknown = try await putRegistrationRules(
            t, #"{"rules": [{"name": "backup", "action": "SUGGEST_REGISTRATION", "sequences": [["totp"], ["email_otp", "smsotp"]]}]}"#)
        #expect(unknown.status == 400 && Self.code(unknown) == "invalid_ruleset", "\(unknown.text)")
        #expect((try? unknown.json())?["field"] as? String == "rules[0].sequences[1][1]", "\(unknown.text)")
        #expect(unknown.text.contains("unknown_method"), "\(unknown.text)")
        let both = try await putRegistrationRules(
            t, #"{"rules": [{"name": "backup", "action": "SUGGEST_REGISTRATION", "methods": ["totp"], "sequences": [["totp"]]}]}"#)
        #expect(both.status == 400 && Self.code(both) == "invalid_ruleset", "\(both.text)")

        // The older form is still taken, and reads back as it was written.
        let older = try await putRegistrationRules(
            t, #"{"rules": [{"name": "backup", "action": "SUGGEST_REGISTRATION", "methods": ["totp", "sms_otp"]}]}"#)
        #expect(older.status == 200, "\(older.text)")
        let olderRules = try Adaptive.decode(RulesetResource.self, older).rules
        #expect(olderRules.first?["methods"] == .array([.string("totp"), .string("sms_otp")]) && olderRules.first?["sequences"] == nil, "\(older.text)")

        // Sequences: a second passkey, or an authenticator app with e-mail codes.
        let stored = try await putRegistrationRules(
            t, #"""
                {"rules": [{"name": "backup", "when": {"fact": "user.methodCounts.fido2", "op": "lt", "value": 2},
                            "action": "SUGGEST_REGISTRATION", "sequences": [["fido2"], ["totp", "email_otp"]]}]}
                """#)
        #expect(stored.status == 200, "\(stored.text)")
        let rules = try Adaptive.decode(RulesetResource.self, stored).rules
        #expect(rules.first?["sequences"] == .array([.array([.string("fido2")]), .array([.string("totp"), .string("email_otp")])]), "\(stored.text)")
        let read = try await TestHTTP.send(
            "GET", "\(Adaptive.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration",
            headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        #expect(try Adaptive.decode(RulesetResource.self, read).rules == rules, "\(read.text)")

        // The sign-in result carries the sequences in the rule's order (once the rules apply).
        let expected = RegistrationSuggestion(
            action: "SUGGEST_REGISTRATION", methods: ["fido2", "totp", "email_otp"], matchedRule: "backup",
            sequences: [["fido2"], ["totp", "email_otp"]])
        var result: SignInProgress?
        #expect(await TestStack.eventually {
            guard let started = try? await adaptive.start(t, username: username),
                let done = try? await adaptive.step(t, started.signinId, with: passkey)
            else { return false }
            result = try? Adaptive.decode(SignInProgress.self, done)
            return result?.registration == expected
        }, "\(String(describing: result))")
        let session = try #require(result?.sessionToken)

        // The user's own session asks what to register now: the same sequences.
        let user = "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(username)"
        let suggestion = try await TestHTTP.send("GET", "\(user)/registration-suggestion", headers: ["Authorization": "Bearer \(session)"])
        let decision = try Adaptive.decode(RegistrationDecision.self, suggestion)
        #expect(suggestion.status == 200, "\(suggestion.text)")
        #expect(decision.action == "SUGGEST_REGISTRATION" && decision.sequences == [["fido2"], ["totp", "email_otp"]], "\(suggestion.text)")
        #expect(decision.methods == ["fido2", "totp", "email_otp"] && decision.matchedRule == "backup", "\(suggestion.text)")

        // The registration service offers the methods of those sequences, and only those.
        let methods = "\(user)/methods"
        func create(_ json: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send(
                "POST", methods, headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(json.utf8))
        }
        let sms = try await create(#"{"type": "sms_otp", "phone": "+15555550123"}"#)
        #expect(sms.status == 403 && Self.code(sms) == "method_not_offered", "\(sms.text)")
        #expect(sms.text.contains("fido2 or totp+email_otp"), "\(sms.text)")
        let email = try await create(#"{"type": "email_otp", "email": "seq@example.org"}"#)
        #expect(email.status == 201, "\(email.text)")
    }
}
