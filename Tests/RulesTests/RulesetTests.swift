import Foundation
import Rules
import Testing
import JSON

/// The model: reading the wire JSON into typed values and writing it back unchanged, through
/// `JSONValue` and through `Codable`.
@Suite struct RulesetTests {
    static let document = #"""
        {"rules": [
          {"name": "tor exit.nodes_1", "when": {"fact": "signals.ip", "op": "inCidr", "value": ["185.220.100.0/22", "2001:db8::/32"]},
           "action": "DENY"},
          {"name": "big-amount",
           "when": {"all": [{"fact": "context.transactionAmount", "op": "gt", "value": 1000},
                            {"any": [{"fact": "signals.country", "op": "notIn", "value": ["FR", "DE", 3, true, null]},
                                     {"not": {"fact": "signals.geo", "op": "withinKm", "value": {"km": 50, "of": "offices"}}},
                                     {"fact": "signals.geo", "op": "withinKm", "value": {"km": 2.5, "of": {"lat": 48.85, "lon": 2.35}}}]},
                            {"fact": "user.registeredMethods", "op": "contains", "value": "fido2"},
                            {"fact": "signals.deviceModel", "op": "exists", "value": true},
                            {"fact": "signals.osVersion", "op": "lt", "value": "14.2"},
                            {"fact": "time.hour", "op": "gte", "value": 22.5},
                            {"fact": "user.failedAttempts", "op": "ne", "value": 0},
                            {"fact": "context.note", "op": "eq", "value": null}]},
           "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], ["fido2", "sms_otp"]], "maxTimeSeconds": 120},
          {"name": "fallback", "action": "ALLOW"}
        ]}
        """#

    @Test func readsTheWireFormatIntoTypedValues() throws {
        let ruleset = try Ruleset(json: RulesTestSupport.json(Self.document))
        #expect(ruleset.rules.map(\.name) == ["tor exit.nodes_1", "big-amount", "fallback"])
        #expect(ruleset.rules[0].action == .deny)
        #expect(ruleset.rules[1].action == .triggerAuthentication(sequences: [["fido2"], ["fido2", "sms_otp"]], maxTimeSeconds: 120))
        #expect(ruleset.rules[2].when == nil)
        guard case .all(let conditions)? = ruleset.rules[1].when else {
            Issue.record("expected all")
            return
        }
        #expect(conditions.count == 8)
        let first = FactPredicate(fact: FactPath("context.transactionAmount")!, op: .gt, value: 1000)
        #expect(conditions[0] == .predicate(first))
        #expect(first.fact.root == .context)
        #expect(first.fact.segments == ["transactionAmount"])
    }

    @Test func writesBackTheSameJSON() throws {
        let original = try RulesTestSupport.json(Self.document)
        let ruleset = try Ruleset(json: original)
        #expect(ruleset.json == original)
        #expect(try Ruleset(json: ruleset.json) == ruleset)
    }

    @Test func roundTripsThroughCodable() throws {
        let decoded = try JSONDecoder().decode(Ruleset.self, from: Data(Self.document.utf8))
        let encoded = try JSONEncoder().encode(decoded)
        #expect(try JSONDecoder().decode(Ruleset.self, from: encoded) == decoded)
        #expect(try JSONDecoder().decode(JSONValue.self, from: encoded) == RulesTestSupport.json(Self.document))
        // The compiled ruleset keeps the ruleset as written, for GET.
        let compiled = try decoded.compile(for: .authentication, locations: ["offices": []])
        #expect(compiled.ruleset == decoded)
        #expect(compiled.kind == .authentication)
    }

    @Test func decodingRefusesWithTheRulesetError() throws {
        let text = #"{"rules": [{"name": "r", "action": "TRIGGER_AUTHENTICATION", "sequence": [["fido2"]]}]}"#
        let error = #expect(throws: RulesetError.self) { try JSONDecoder().decode(Ruleset.self, from: Data(text.utf8)) }
        #expect(error?.code == .unknownMember)
        #expect(error?.path == "rules[0].sequence")
    }

    @Test func decisionsAndTracesEncodeAsDocumented() throws {
        let decision = RuleDecision(
            action: .triggerAuthentication(sequences: [["fido2", "sms_otp"]], maxTimeSeconds: nil), matchedRule: "big")
        let encoded = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(decision))
        #expect(encoded == ["action": "TRIGGER_AUTHENTICATION", "matchedRule": "big", "sequences": [["fido2", "sms_otp"]], "maxTimeSeconds": 300])
        #expect(decision.description == "TRIGGER_AUTHENTICATION (big)")
        #expect(decision.actionName == "TRIGGER_AUTHENTICATION")
    }

    @Test func decisionsReadBackFromTheirJSON() throws {
        let decisions = [
            RuleDecision(action: .triggerAuthentication(sequences: [["fido2"], ["totp", "sms_otp"]], maxTimeSeconds: 90), matchedRule: "r 1"),
            RuleDecision(action: .suggestRegistration(methods: ["totp"]), matchedRule: "default"),
            RuleDecision(action: .deny, matchedRule: "tor"),
        ]
        for decision in decisions {
            #expect(try RuleDecision(json: decision.json) == decision)
            #expect(try JSONDecoder().decode(RuleDecision.self, from: JSONEncoder().encode(decision)) == decision)
        }
        let bad = #expect(throws: RulesetError.self) {
            try RuleDecision(json: ["action": "ALLOW", "matchedRule": "r", "sequences": [["fido2"]]])
        }
        #expect(bad?.code == .unknownMember)
        #expect(bad?.path == "sequences")
        let unnamed = #expect(throws: RulesetError.self) { try RuleDecision(json: ["action": "ALLOW", "matchedRule": ""]) }
        #expect(unnamed?.path == "matchedRule")
    }

    @Test func conditionsDescribeThemselvesAndCountTheirNodes() throws {
        let ruleset = try Ruleset(json: RulesTestSupport.json(Self.document))
        let when = try #require(ruleset.rules[1].when)
        #expect(when.nodeCount == 13)  // all, 7 tests, any, 2 tests, not and its test
        let small = Condition.all([
            .predicate(FactPredicate(fact: FactPath("context.amount")!, op: .gt, value: 1000)),
            .not(.predicate(FactPredicate(fact: FactPath("signals.newDevice")!, op: .eq, value: false))),
            .any([]),
        ])
        #expect(small.description == "all(context.amount gt 1000, not(signals.newDevice eq false), any())")
        #expect(small.nodeCount == 5)
    }

    @Test(arguments: [
        (RuleAction.allow, "ALLOW"), (.deny, "DENY"), (.triggerAuthentication(sequences: [["uaf"]], maxTimeSeconds: 30), "TRIGGER_AUTHENTICATION"),
        (.suggestRegistration(methods: ["totp"]), "SUGGEST_REGISTRATION"), (.enforceRegistration(methods: ["fido2"]), "ENFORCE_REGISTRATION"),
        (.ignoreRegistration, "IGNORE_REGISTRATION"),
    ])
    func actionsRoundTrip(action: RuleAction, name: String) throws {
        #expect(action.name == name)
        let ruleset = Ruleset(rules: [Rule(name: "r", action: action)])
        #expect(try Ruleset(json: ruleset.json) == ruleset)
        let kind: Ruleset.Kind = Ruleset.Kind.authentication.allows(action) ? .authentication : .registration
        #expect(try ruleset.compile(for: kind).evaluate([:]).action == action)
        #expect(Ruleset.Kind.allCases.filter { $0.allows(action) }.count == (action == .deny ? 2 : 1))
    }

    @Test(arguments: [
        ("signals.ip", true), ("context.transactionAmount", true), ("user.registeredMethods", true), ("time.weekday", true),
        ("signals._private.x9", true), ("signals", false), ("device.securityEnabled", true), ("devices.ip", false), ("signals.", false), (".ip", false),
        ("signals.ip.", false), ("signals.9", false), ("signals.a b", false), ("", false),
    ])
    func factPaths(text: String, valid: Bool) {
        #expect((FactPath(text) != nil) == valid)
        if valid { #expect(FactPath(text)?.description == text) }
    }

    @Test func errorsCompareByCodePathAndMessage() throws {
        let first = try #require(try RulesTestSupport.error(#"{"rules": [{"name": "r", "action": "BLOCK"}]}"#))
        let second = try #require(try RulesTestSupport.error(#"{"rules": [{"name": "r", "action": "BLOCK"}]}"#))
        #expect(first == second)
        #expect(first.code.rawValue == "unknown_action")
        #expect(first.debugDescription.hasPrefix("RulesetError(unknown_action): rules[0].action: "))
        // Long strings from the ruleset are cut in messages.
        let long = String(repeating: "X", count: 500)
        let cut = try #require(try RulesTestSupport.error(#"{"rules": [{"name": "r", "action": "\#(long)"}]}"#))
        #expect(cut.message.count < 200)
    }
}
