import Foundation
import Rules
import Testing
import JSON

/// ``Ruleset/checkMethods(_:for:)``: the methods a ruleset names, against those of the service.
@Suite struct RulesetMethodCheckTests {
    static let catalog = Ruleset.MethodCatalog(
        known: ["fido2", "sms_otp", "email_otp", "totp"], signing: ["fido2"],
        transactionFacts: ["context.transactionId", "context.transactionAmount"])

    /// The error checking `text` raises, or `nil` when it passes.
    static func error(_ text: String, kind: Ruleset.Kind = .authentication) throws -> RulesetError? {
        let ruleset = try Ruleset(json: RulesTestSupport.json(text))
        do {
            try ruleset.checkMethods(catalog, for: kind)
            return nil
        } catch {
            return error
        }
    }

    @Test func anUnknownMethodInASequenceIsRefusedWithItsPath() throws {
        let text = #"{"rules": [{"name": "a", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], ["fido2", "smsotp"]]}]}"#
        let error = try #require(try Self.error(text))
        #expect(error.code == .unknownMethod)
        #expect(error.path == "rules[0].sequences[1][1]")
        #expect(error.message.contains("\"smsotp\""))
    }

    @Test func anUnknownMethodInARegistrationRuleIsRefused() throws {
        let text = #"{"rules": [{"name": "a", "action": "SUGGEST_REGISTRATION", "methods": ["fido2", "fido3"]}]}"#
        let error = try #require(try Self.error(text, kind: .registration))
        #expect(error.code == .unknownMethod)
        #expect(error.path == "rules[0].methods[1]")
    }

    @Test func anUnknownMethodInARegistrationSequenceIsRefusedWithItsPath() throws {
        let unknown = #"{"rules": [{"name": "a", "action": "ENFORCE_REGISTRATION", "sequences": [["fido2"], ["totp", "smsotp"]]}]}"#
        let error = try #require(try Self.error(unknown, kind: .registration))
        #expect(error.code == .unknownMethod)
        #expect(error.path == "rules[0].sequences[1][1]")
        #expect(error.message.contains("\"smsotp\""))
    }

    @Test func knownMethodsPass() throws {
        #expect(try Self.error(#"{"rules": [{"name": "a", "action": "SUGGEST_REGISTRATION", "sequences": [["fido2"], ["totp", "sms_otp"]]}]}"#, kind: .registration) == nil)
        #expect(try Self.error(#"{"rules": [{"name": "a", "action": "TRIGGER_AUTHENTICATION", "sequences": [["sms_otp"], ["totp", "fido2"]]}]}"#) == nil)
        #expect(try Self.error(#"{"rules": [{"name": "a", "action": "ENFORCE_REGISTRATION", "methods": ["totp"]}]}"#, kind: .registration) == nil)
    }

    @Test func aRuleAboutTransactionsNeedsASigningStepInEverySequence() throws {
        let text = #"""
            {"rules": [{"name": "big", "when": {"all": [{"fact": "context.transactionAmount", "op": "gt", "value": 1000}]},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"], ["sms_otp"]]}]}
            """#
        let error = try #require(try Self.error(text))
        #expect(error.code == .sequenceCannotConfirm)
        #expect(error.path == "rules[0].sequences[1]")
        // With a signing step in each sequence it passes.
        let fixed = text.replacingOccurrences(of: #"["sms_otp"]]}]}"#, with: #"["totp", "fido2"]]}]}"#)
        #expect(try Self.error(fixed) == nil)
    }

    @Test func aRuleThatExcludesTransactionsMayOfferCodesAlone() throws {
        let negated = #"""
            {"rules": [{"name": "plain", "when": {"not": {"fact": "context.transactionId", "op": "exists", "value": true}},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["sms_otp"]]}]}
            """#
        #expect(try Self.error(negated) == nil)
        let absent = #"""
            {"rules": [{"name": "plain", "when": {"fact": "context.transactionId", "op": "exists", "value": false},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["sms_otp"]]}]}
            """#
        #expect(try Self.error(absent) == nil)
        let present = absent.replacingOccurrences(of: #""value": false"#, with: #""value": true"#)
        #expect(try Self.error(present)?.code == .sequenceCannotConfirm)
    }
}
