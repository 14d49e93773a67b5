import Rules
import Testing
import JSON

/// Combinators, rule order, decisions and the defaults of both kinds.
@Suite struct CompiledRulesetTests {
    static let t = #"{"fact": "context.t", "op": "eq", "value": true}"#
    static let f = #"{"fact": "context.f", "op": "eq", "value": true}"#
    static let missing = #"{"fact": "context.missing", "op": "eq", "value": true}"#

    /// Facts where `context.t` holds and `context.f` does not.
    static let facts: JSONValue = ["context": ["t": true, "f": false]]

    @Test(arguments: [
        (#"{"all": []}"#, true),
        (#"{"any": []}"#, false),
        (#"{"not": {"all": []}}"#, false),
        (#"{"not": {"any": []}}"#, true),
        ("{\"all\": [\(t), \(t)]}", true),
        ("{\"all\": [\(t), \(f)]}", false),
        ("{\"all\": [\(f), \(t)]}", false),
        ("{\"any\": [\(f), \(t)]}", true),
        ("{\"any\": [\(f), \(f)]}", false),
        ("{\"any\": [\(missing), \(t)]}", true),
        ("{\"not\": \(t)}", false),
        ("{\"not\": \(f)}", true),
        ("{\"not\": \(missing)}", true),
        ("{\"not\": {\"not\": \(t)}}", true),
        ("{\"all\": [{\"any\": [\(f), {\"not\": \(f)}]}, {\"not\": {\"all\": [\(t), \(f)]}}]}", true),
        ("{\"any\": [{\"all\": [\(t), \(f)]}, {\"all\": [\(f), \(t)]}, {\"not\": {\"any\": [\(t)]}}]}", false),
        ("{\"all\": [{\"all\": [{\"all\": [{\"any\": [{\"not\": \(f)}]}]}]}]}", true),
    ])
    func combinators(condition: String, expected: Bool) throws {
        let compiled = try RulesTestSupport.compile(
            #"{"rules": [{"name": "hit", "when": \#(condition), "action": "DENY"}]}"#)
        #expect(RulesTestSupport.hits(compiled, Self.facts) == expected)
    }

    @Test func theFirstMatchingRuleWins() throws {
        let compiled = try RulesTestSupport.compile(
            #"""
            {"rules": [
              {"name": "huge", "when": {"fact": "context.amount", "op": "gt", "value": 10000}, "action": "DENY"},
              {"name": "big", "when": {"fact": "context.amount", "op": "gt", "value": 1000},
               "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"]], "maxTimeSeconds": 120},
              {"name": "also-big", "when": {"fact": "context.amount", "op": "gt", "value": 500}, "action": "ALLOW"},
              {"name": "rest", "action": "ALLOW"},
              {"name": "never", "action": "DENY"}
            ]}
            """#)
        let rows: [(Int64, String)] = [(20_000, "huge"), (5_000, "big"), (700, "also-big"), (10, "rest")]
        for (amount, rule) in rows {
            #expect(compiled.evaluate(["context": ["amount": .int(amount)]]).matchedRule == rule, "\(amount)")
        }
        let big = compiled.evaluate(["context": ["amount": 5_000]])
        #expect(big.action == .triggerAuthentication(sequences: [["fido2", "sms_otp"]], maxTimeSeconds: 120))
        #expect(big.sequences == [["fido2", "sms_otp"]])
        #expect(big.maxTimeSeconds == 120)
        #expect(big.methods == [])
        #expect(!big.isDefault)
        // Missing facts fail the tests and fall through to the catch-all.
        #expect(compiled.evaluate([:]).matchedRule == "rest")
    }

    @Test func authenticationDefault() throws {
        let expected = RuleDecision(
            action: .triggerAuthentication(sequences: [["fido2"]], maxTimeSeconds: 300), matchedRule: "default")
        #expect(Ruleset.Kind.authentication.defaultDecision == expected)
        let empty = try RulesTestSupport.compile(#"{"rules": []}"#)
        #expect(empty.evaluate(["context": ["amount": 1]]) == expected)
        #expect(CompiledRuleset(defaultFor: .authentication).evaluate([:]) == expected)
        let none = try RulesTestSupport.compile(
            #"{"rules": [{"name": "r", "when": {"fact": "context.x", "op": "exists", "value": true}, "action": "DENY"}]}"#)
        let decision = none.evaluate([:])
        #expect(decision == expected)
        #expect(decision.isDefault)
        #expect(decision.sequences == [["fido2"]])
        #expect(decision.maxTimeSeconds == 300)
        #expect(decision.json == ["action": "TRIGGER_AUTHENTICATION", "matchedRule": "default", "sequences": [["fido2"]], "maxTimeSeconds": 300])
    }

    @Test func registrationDefault() throws {
        let expected = RuleDecision(action: .ignoreRegistration, matchedRule: "default")
        #expect(Ruleset.Kind.registration.defaultDecision == expected)
        #expect(try RulesTestSupport.compile(#"{"rules": []}"#, kind: .registration).evaluate([:]) == expected)
        #expect(CompiledRuleset(defaultFor: .registration).evaluate([:]) == expected)
        let none = try RulesTestSupport.compile(
            #"{"rules": [{"name": "r", "when": {"any": []}, "action": "SUGGEST_REGISTRATION", "methods": ["fido2"]}]}"#,
            kind: .registration)
        #expect(none.evaluate(["user": ["registeredMethods": []]]) == expected)
        #expect(expected.json == ["action": "IGNORE_REGISTRATION", "matchedRule": "default"])
    }

    @Test func registrationDecisions() throws {
        let compiled = try RulesTestSupport.compile(
            #"""
            {"rules": [
              {"name": "blocked", "when": {"fact": "user.failedAttempts", "op": "gte", "value": 5}, "action": "DENY"},
              {"name": "no-fido", "when": {"not": {"fact": "user.registeredMethods", "op": "contains", "value": "fido2"}},
               "action": "ENFORCE_REGISTRATION", "methods": ["fido2"]},
              {"name": "no-backup", "when": {"not": {"fact": "user.registeredMethods", "op": "contains", "value": "totp"}},
               "action": "SUGGEST_REGISTRATION", "methods": ["totp", "sms_otp"]}
            ]}
            """#, kind: .registration)
        let enforce = compiled.evaluate(["user": ["registeredMethods": ["sms_otp"], "failedAttempts": 0]])
        #expect(enforce.action == .enforceRegistration(methods: ["fido2"]))
        #expect(enforce.methods == ["fido2"])
        #expect(enforce.maxTimeSeconds == nil)
        let suggest = compiled.evaluate(["user": ["registeredMethods": ["fido2"]]])
        #expect(suggest.action == .suggestRegistration(methods: ["totp", "sms_otp"]))
        #expect(suggest.json == ["action": "SUGGEST_REGISTRATION", "matchedRule": "no-backup", "methods": ["totp", "sms_otp"]])
        #expect(compiled.evaluate(["user": ["registeredMethods": ["fido2", "totp"]]]).isDefault)
        #expect(compiled.evaluate(["user": ["failedAttempts": 7]]).action == .deny)
    }

    @Test func registrationRulesAnswerSequencesAndKeepTheOlderFormAsWritten() throws {
        let text = #"""
            {"rules": [
              {"name": "no-fido", "when": {"not": {"fact": "user.registeredMethods", "op": "contains", "value": "fido2"}},
               "action": "ENFORCE_REGISTRATION", "sequences": [["fido2"], ["totp", "sms_otp"]]},
              {"name": "stored-before", "action": "SUGGEST_REGISTRATION", "methods": ["totp", "sms_otp"]}
            ]}
            """#
        let compiled = try RulesTestSupport.compile(text, kind: .registration)
        let enforce = compiled.evaluate(["user": ["registeredMethods": ["sms_otp"]]])
        #expect(enforce.action == .enforceRegistration(sequences: [["fido2"], ["totp", "sms_otp"]]))
        #expect(enforce.registrationSequences == [["fido2"], ["totp", "sms_otp"]])
        #expect(enforce.methods == ["fido2", "totp", "sms_otp"])
        #expect(enforce.json == ["action": "ENFORCE_REGISTRATION", "matchedRule": "no-fido", "sequences": [["fido2"], ["totp", "sms_otp"]]])
        #expect(try RuleDecision(json: enforce.json) == enforce)
        // The older form reads as one-method sequences and is written back as it was stored.
        let older = compiled.evaluate(["user": ["registeredMethods": ["fido2"]]])
        #expect(older.registrationSequences == [["totp"], ["sms_otp"]])
        #expect(older.json == ["action": "SUGGEST_REGISTRATION", "matchedRule": "stored-before", "methods": ["totp", "sms_otp"]])
        let ruleset = try Ruleset(json: try JSONParser.parse(Array(text.utf8)))
        #expect(try Ruleset(json: ruleset.json) == ruleset)
        #expect(ruleset.json.jsonString.contains(#""methods":["totp","sms_otp"]"#))
        #expect(ruleset.json.jsonString.contains(#""sequences":[["fido2"],["totp","sms_otp"]]"#))
    }

    @Test func aRuleWithoutMaxTimeGetsTheDefaultTime() throws {
        let compiled = try RulesTestSupport.compile(
            #"{"rules": [{"name": "r", "action": "TRIGGER_AUTHENTICATION", "sequences": [["totp"]]}]}"#)
        let decision = compiled.evaluate([:])
        #expect(decision.maxTimeSeconds == RuleAction.defaultMaxTimeSeconds)
        // The stored ruleset keeps the member absent.
        #expect(compiled.ruleset.json == ["rules": [["name": "r", "action": "TRIGGER_AUTHENTICATION", "sequences": [["totp"]]]]])
    }

    @Test func factPathsListWhatRulesLookAt() throws {
        let compiled = try RulesTestSupport.compile(
            #"""
            {"rules": [
              {"name": "a", "when": {"all": [{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": {"lat": 0, "lon": 0}}},
                                            {"fact": "signals.geo.lat", "op": "gt", "value": 10}]}, "action": "DENY"},
              {"name": "b", "when": {"fact": "signals.geo.lat", "op": "lt", "value": -10}, "action": "DENY"}
            ]}
            """#)
        #expect(compiled.factPaths.map(\.description) == ["signals.geo", "signals.geo.lat"])
        let prepared = compiled.prepare(["signals": ["geo": ["lat": 20, "lon": 0]]])
        #expect(prepared.count == 3)  // signals, signals.geo, signals.geo.lat
        #expect(prepared.presentCount == 3)
        #expect(compiled.evaluate(prepared).isDefault)
        #expect(compiled.evaluate(["signals": ["geo": ["lat": -20, "lon": 0]]]).matchedRule == "b")
        #expect(compiled.prepare(["user": [:]]).presentCount == 0)
    }

    @Test func compiledRulesetsAreSharedAcrossTasks() async throws {
        let compiled = try RulesTestSupport.compile(
            #"{"rules": [{"name": "big", "when": {"fact": "context.amount", "op": "gt", "value": 100}, "action": "DENY"}]}"#)
        let decisions = await withTaskGroup(of: RuleDecision.self) { group in
            for amount in 0..<64 {
                group.addTask { compiled.evaluate(["context": ["amount": .int(Int64(amount * 4))]]) }
            }
            return await group.reduce(into: [String]()) { $0.append($1.matchedRule) }
        }
        #expect(decisions.filter { $0 == "big" }.count == 38)
    }
}
