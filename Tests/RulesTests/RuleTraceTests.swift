import Foundation
import Rules
import Testing
import JSON

/// Explain: the shape of traces, and agreement of explain, compiled evaluation and the
/// reference semantics on many random rulesets and facts.
@Suite struct RuleTraceTests {
    static let ruleset = #"""
        {"rules": [
          {"name": "big-amount",
           "when": {"all": [{"fact": "context.transactionAmount", "op": "gt", "value": 1000},
                            {"fact": "signals.newDevice", "op": "eq", "value": true}]},
           "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"]]},
          {"name": "risky-place",
           "when": {"any": [{"fact": "signals.country", "op": "in", "value": ["KP", "IR"]},
                            {"fact": "signals.ip", "op": "inCidr", "value": "185.220.100.0/22"}]},
           "action": "DENY"},
          {"name": "not-new", "when": {"not": {"fact": "signals.newDevice", "op": "eq", "value": false}}, "action": "DENY"},
          {"name": "office", "when": {"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": {"lat": 48.8566, "lon": 2.3522}}},
           "action": "ALLOW"}
        ]}
        """#

    @Test func traceNamesTheFailingConditionAndTheActualValue() throws {
        let compiled = try RulesTestSupport.compile(Self.ruleset)
        let facts: JSONValue = [
            "context": ["transactionAmount": 50],
            "signals": ["newDevice": false, "country": "FR", "geo": ["lat": 48.86, "lon": 2.35]],
        ]
        let trace = compiled.explain(facts)
        #expect(trace.decision == compiled.evaluate(facts))
        #expect(trace.decision.matchedRule == "office")
        let expected: JSONValue = [
            "decision": ["action": "ALLOW", "matchedRule": "office"],
            "rules": [
                [
                    "rule": "big-amount", "matched": false,
                    "because": [
                        "path": "when.all[0]", "fact": "context.transactionAmount", "op": "gt", "value": 1000, "actual": 50,
                    ],
                ],
                [
                    "rule": "risky-place", "matched": false,
                    "because": [
                        "path": "when", "op": "any",
                        "alternatives": [
                            ["path": "when.any[0]", "fact": "signals.country", "op": "in", "value": ["KP", "IR"], "actual": "FR"],
                            ["path": "when.any[1]", "fact": "signals.ip", "op": "inCidr", "value": "185.220.100.0/22", "missing": true],
                        ],
                    ],
                ],
                [
                    "rule": "not-new", "matched": false,
                    "because": ["path": "when", "op": "not", "fact": "signals.newDevice", "actual": false],
                ],
                ["rule": "office", "matched": true],
            ],
        ]
        #expect(trace.json == expected)
        // Encoding gives the same JSON.
        let encoded = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(trace))
        #expect(encoded == expected)
    }

    @Test func traceOfTheDefaultListsEveryRule() throws {
        let compiled = try RulesTestSupport.compile(Self.ruleset)
        let trace = compiled.explain(["signals": ["newDevice": false]])
        #expect(trace.decision.isDefault)
        #expect(trace.rules.map(\.rule) == ["big-amount", "risky-place", "not-new", "office"])
        #expect(trace.rules.allSatisfy { !$0.matched && $0.because != nil })
        #expect(trace.rules[0].because?.missing == true)
        #expect(trace.rules[0].because?.path == "when.all[0]")
        #expect(trace.rules[3].because?.json == [
            "path": "when", "fact": "signals.geo", "op": "withinKm",
            "value": ["km": 5, "of": ["lat": 48.8566, "lon": 2.3522]], "missing": true,
        ])
    }

    @Test func emptyAnyFailsWithNoAlternatives() throws {
        let compiled = try RulesTestSupport.compile(#"{"rules": [{"name": "r", "when": {"all": [{"all": []}, {"any": []}]}, "action": "DENY"}]}"#)
        let failure = try #require(compiled.explain([:]).rules.first?.because)
        #expect(failure.json == ["path": "when.all[1]", "op": "any", "alternatives": []])
    }

    @Test func aRuleWithoutConditionMatchesAtOnce() throws {
        let compiled = try RulesTestSupport.compile(#"{"rules": [{"name": "always", "action": "ALLOW"}, {"name": "never", "action": "DENY"}]}"#)
        let trace = compiled.explain([:])
        #expect(trace.rules.count == 1)
        #expect(trace.rules.first?.rule == "always")
        #expect(trace.rules.first?.matched == true)
        #expect(trace.rules.first?.because == nil)
        #expect(trace.rules.first?.json == ["rule": "always", "matched": true])
    }

    /// Explain, evaluate on prepared facts, evaluate on JSON and the reference semantics agree on
    /// thousands of random facts over hundreds of random rulesets.
    @Test(arguments: 0..<8)
    func explainAgreesWithEvaluate(seed: UInt64) throws {
        var generator = RandomRulesets(seed: 0x5EED_0000 + seed)
        for _ in 0..<40 {
            let ruleset = generator.ruleset()
            let compiled = try ruleset.compile(for: .authentication, locations: RandomRulesets.locations)
            // What is compiled reads back from its JSON to the same ruleset.
            #expect(try Ruleset(json: ruleset.json) == ruleset)
            let reference = ReferenceEvaluator(ruleset: ruleset, kind: .authentication, locations: RandomRulesets.locations)
            for _ in 0..<60 {
                let facts = generator.facts()
                let decision = compiled.evaluate(compiled.prepare(facts))
                let trace = compiled.explain(facts)
                #expect(trace.decision == decision)
                #expect(compiled.evaluate(facts) == decision)
                #expect(reference.decide(facts) == decision, "\(ruleset.json.jsonString) on \(facts.jsonString)")
                // The trace stops at the deciding rule, and every rule before it says why not.
                let decidingIndex = ruleset.rules.firstIndex { $0.name == decision.matchedRule }
                #expect(trace.rules.count == (decidingIndex.map { $0 + 1 } ?? ruleset.rules.count))
                for (i, entry) in trace.rules.enumerated() {
                    #expect(entry.rule == ruleset.rules[i].name)
                    #expect(entry.matched == (i == decidingIndex))
                    #expect((entry.because == nil) == entry.matched)
                }
            }
        }
    }
}
