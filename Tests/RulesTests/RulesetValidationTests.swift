import Rules
import Testing
import JSON

/// Every way a ruleset is refused, each with the exact code and path.
@Suite struct RulesetValidationTests {
    /// A one-rule ruleset around a condition.
    static func when(_ condition: String) -> String {
        #"{"rules": [{"name": "r", "when": \#(condition), "action": "DENY"}]}"#
    }

    /// A one-rule ruleset around the members of the rule after its name.
    static func rule(_ members: String) -> String {
        #"{"rules": [{"name": "r", \#(members)}]}"#
    }

    static let predicate = #"{"fact": "context.amount", "op": "gt", "value": 1000}"#

    static let cases: [InvalidCase] = [
        // The document.
        InvalidCase("document not an object", "[]", .invalidType, at: "$"),
        InvalidCase("unknown member of the document", #"{"rules": [], "version": 1}"#, .unknownMember, at: "version"),
        InvalidCase("rules missing", "{}", .missingMember, at: "rules"),
        InvalidCase("rules not an array", #"{"rules": {}}"#, .invalidType, at: "rules"),
        InvalidCase("rule not an object", #"{"rules": [1]}"#, .invalidType, at: "rules[0]"),
        // Rule members.
        InvalidCase(
            "unknown member: sequence for sequences",
            rule(#""action": "TRIGGER_AUTHENTICATION", "sequence": [["fido2"]]"#), .unknownMember, at: "rules[0].sequence"),
        InvalidCase("unknown member: condition", rule(#""action": "DENY", "condition": {}"#), .unknownMember, at: "rules[0].condition"),
        InvalidCase("name missing", #"{"rules": [{"action": "DENY"}]}"#, .missingMember, at: "rules[0].name"),
        InvalidCase("name not a string", #"{"rules": [{"name": 7, "action": "DENY"}]}"#, .invalidType, at: "rules[0].name"),
        InvalidCase("name with a slash", #"{"rules": [{"name": "big/amount", "action": "DENY"}]}"#, .invalidRuleName, at: "rules[0].name"),
        InvalidCase("name empty", #"{"rules": [{"name": "", "action": "DENY"}]}"#, .invalidRuleName, at: "rules[0].name"),
        InvalidCase(
            "name of 65 characters", #"{"rules": [{"name": "\#(String(repeating: "n", count: 65))", "action": "DENY"}]}"#,
            .invalidRuleName, at: "rules[0].name"),
        InvalidCase("name reserved", #"{"rules": [{"name": "default", "action": "DENY"}]}"#, .invalidRuleName, at: "rules[0].name"),
        InvalidCase(
            "duplicate rule name", #"{"rules": [{"name": "a", "action": "DENY"}, {"name": "b", "action": "DENY"}, {"name": "a", "action": "ALLOW"}]}"#,
            .duplicateRuleName, at: "rules[2].name"),
        // Actions.
        InvalidCase("action missing", rule(#""when": {"all": []}"#), .missingMember, at: "rules[0].action"),
        InvalidCase("action not a string", rule(#""action": ["DENY"]"#), .invalidType, at: "rules[0].action"),
        InvalidCase("unknown action", rule(#""action": "BLOCK""#), .unknownAction, at: "rules[0].action"),
        InvalidCase("action in lowercase", rule(#""action": "deny""#), .unknownAction, at: "rules[0].action"),
        InvalidCase("ALLOW in a registration ruleset", rule(#""action": "ALLOW""#), kind: .registration, .actionNotAllowed, at: "rules[0].action"),
        InvalidCase(
            "TRIGGER_AUTHENTICATION in a registration ruleset", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]"#),
            kind: .registration, .actionNotAllowed, at: "rules[0].action"),
        InvalidCase(
            "SUGGEST_REGISTRATION in an authentication ruleset", rule(#""action": "SUGGEST_REGISTRATION", "methods": ["fido2"]"#),
            .actionNotAllowed, at: "rules[0].action"),
        InvalidCase("IGNORE_REGISTRATION in an authentication ruleset", rule(#""action": "IGNORE_REGISTRATION""#), .actionNotAllowed, at: "rules[0].action"),
        InvalidCase("sequences missing", rule(#""action": "TRIGGER_AUTHENTICATION""#), .missingMember, at: "rules[0].sequences"),
        InvalidCase("sequences not an array", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": "fido2""#), .invalidType, at: "rules[0].sequences"),
        InvalidCase("sequences empty", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": []"#), .invalidValue, at: "rules[0].sequences"),
        InvalidCase("empty sequence", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], []]"#), .invalidValue, at: "rules[0].sequences[1]"),
        InvalidCase("sequence not an array", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": ["fido2"]"#), .invalidType, at: "rules[0].sequences[0]"),
        InvalidCase("method not a string", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [[1]]"#), .invalidType, at: "rules[0].sequences[0][0]"),
        InvalidCase(
            "method name in capitals", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], ["FIDO2", "sms_otp"]]"#),
            .invalidMethodName, at: "rules[0].sequences[1][0]"),
        InvalidCase(
            "method name with a dash", rule(#""action": "SUGGEST_REGISTRATION", "methods": ["fido2", "sms-otp"]"#), kind: .registration,
            .invalidMethodName, at: "rules[0].methods[1]"),
        InvalidCase(
            "method name of 33 characters", rule(#""action": "ENFORCE_REGISTRATION", "methods": ["a\#(String(repeating: "b", count: 32))"]"#),
            kind: .registration, .invalidMethodName, at: "rules[0].methods[0]"),
        InvalidCase("sequences missing", rule(#""action": "ENFORCE_REGISTRATION""#), kind: .registration, .missingMember, at: "rules[0].sequences"),
        InvalidCase(
            "registration sequence empty", rule(#""action": "SUGGEST_REGISTRATION", "sequences": [["fido2"], []]"#), kind: .registration,
            .invalidValue, at: "rules[0].sequences[1]"),
        InvalidCase(
            "registration sequence not an array", rule(#""action": "SUGGEST_REGISTRATION", "sequences": ["fido2"]"#), kind: .registration,
            .invalidType, at: "rules[0].sequences[0]"),
        InvalidCase(
            "registration method name in capitals", rule(#""action": "ENFORCE_REGISTRATION", "sequences": [["totp", "SMS_OTP"]]"#),
            kind: .registration, .invalidMethodName, at: "rules[0].sequences[0][1]"),
        InvalidCase(
            "maxTimeSeconds on SUGGEST_REGISTRATION", rule(#""action": "SUGGEST_REGISTRATION", "sequences": [["fido2"]], "maxTimeSeconds": 60"#),
            kind: .registration, .unknownMember, at: "rules[0].maxTimeSeconds"),
        InvalidCase("methods empty", rule(#""action": "SUGGEST_REGISTRATION", "methods": []"#), kind: .registration, .invalidValue, at: "rules[0].methods"),
        InvalidCase("sequences on ALLOW", rule(#""action": "ALLOW", "sequences": [["fido2"]]"#), .unknownMember, at: "rules[0].sequences"),
        InvalidCase(
            "methods on TRIGGER_AUTHENTICATION", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "methods": ["fido2"]"#),
            .unknownMember, at: "rules[0].methods"),
        InvalidCase(
            "sequences on SUGGEST_REGISTRATION", rule(#""action": "SUGGEST_REGISTRATION", "methods": ["totp"], "sequences": [["fido2"]]"#),
            kind: .registration, .unknownMember, at: "rules[0].sequences"),
        InvalidCase("maxTimeSeconds on DENY", rule(#""action": "DENY", "maxTimeSeconds": 60"#), .unknownMember, at: "rules[0].maxTimeSeconds"),
        InvalidCase(
            "maxTimeSeconds zero", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "maxTimeSeconds": 0"#),
            .invalidValue, at: "rules[0].maxTimeSeconds"),
        InvalidCase(
            "maxTimeSeconds over an hour", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "maxTimeSeconds": 3601"#),
            .invalidValue, at: "rules[0].maxTimeSeconds"),
        InvalidCase(
            "maxTimeSeconds negative", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "maxTimeSeconds": -5"#),
            .invalidValue, at: "rules[0].maxTimeSeconds"),
        InvalidCase(
            "maxTimeSeconds a string", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "maxTimeSeconds": "300""#),
            .invalidType, at: "rules[0].maxTimeSeconds"),
        InvalidCase(
            "maxTimeSeconds fractional", rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]], "maxTimeSeconds": 300.5"#),
            .invalidType, at: "rules[0].maxTimeSeconds"),
        // Conditions.
        InvalidCase("condition not an object", when("[]"), .invalidType, at: "rules[0].when"),
        InvalidCase("condition empty", when("{}"), .missingMember, at: "rules[0].when"),
        InvalidCase("unknown combinator", when(#"{"every": []}"#), .unknownMember, at: "rules[0].when.every"),
        InvalidCase("two combinators", when(#"{"all": [], "any": []}"#), .unknownMember, at: "rules[0].when.any"),
        InvalidCase("all not an array", when(#"{"all": {}}"#), .invalidType, at: "rules[0].when.all"),
        InvalidCase("not of an array", when(#"{"not": []}"#), .invalidType, at: "rules[0].when.not"),
        InvalidCase("element of all not an object", when(#"{"all": [\#(predicate), 3]}"#), .invalidType, at: "rules[0].when.all[1]"),
        InvalidCase(
            "unknown member of a fact condition", when(#"{"fact": "context.amount", "op": "gt", "value": 1, "comment": "x"}"#),
            .unknownMember, at: "rules[0].when.comment"),
        InvalidCase("combinator beside a fact", when(#"{"fact": "context.amount", "op": "gt", "value": 1, "not": {}}"#), .unknownMember, at: "rules[0].when.not"),
        InvalidCase("fact missing", when(#"{"op": "gt", "value": 1}"#), .missingMember, at: "rules[0].when.fact"),
        InvalidCase("op missing", when(#"{"fact": "context.amount", "value": 1}"#), .missingMember, at: "rules[0].when.op"),
        InvalidCase("value missing", when(#"{"fact": "context.amount", "op": "exists"}"#), .missingMember, at: "rules[0].when.value"),
        InvalidCase("fact not a string", when(#"{"fact": ["context", "amount"], "op": "gt", "value": 1}"#), .invalidType, at: "rules[0].when.fact"),
        InvalidCase("op not a string", when(#"{"fact": "context.amount", "op": 3, "value": 1}"#), .invalidType, at: "rules[0].when.op"),
        InvalidCase(
            "bad operator, deep", #"{"rules": [{"name": "a", "action": "DENY"}, {"name": "b", "action": "DENY"}, {"name": "c", "action": "DENY"}, {"name": "d", "when": {"all": [\#(predicate), {"fact": "context.amount", "op": "greater", "value": 1}]}, "action": "DENY"}]}"#,
            .unknownOperator, at: "rules[3].when.all[1].op"),
        InvalidCase("operator in the wrong case", when(#"{"fact": "context.x", "op": "notin", "value": []}"#), .unknownOperator, at: "rules[0].when.op"),
        // Fact paths.
        InvalidCase("unknown fact root", when(#"{"fact": "devices.ip", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("root alone", when(#"{"fact": "signals", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("root in capitals", when(#"{"fact": "Signals.ip", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("empty segment", when(#"{"fact": "signals..ip", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("trailing dot", when(#"{"fact": "signals.ip.", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("segment starting with a digit", when(#"{"fact": "signals.2fa", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("segment with a dash", when(#"{"fact": "signals.ip-address", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase("nine segments", when(#"{"fact": "user.a.b.c.d.e.f.g.h.i", "op": "exists", "value": true}"#), .invalidFact, at: "rules[0].when.fact"),
        InvalidCase(
            "segment of 65 characters", when(#"{"fact": "user.\#(String(repeating: "s", count: 65))", "op": "exists", "value": true}"#),
            .invalidFact, at: "rules[0].when.fact"),
        // Operands.
        InvalidCase("gt with an object", when(#"{"fact": "context.amount", "op": "gt", "value": {"n": 1}}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("lte with a Boolean", when(#"{"fact": "context.amount", "op": "lte", "value": true}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("gte with null", when(#"{"fact": "context.amount", "op": "gte", "value": null}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("eq with an array", when(#"{"fact": "context.x", "op": "eq", "value": [1]}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("ne with an object", when(#"{"fact": "context.x", "op": "ne", "value": {}}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("in with a string", when(#"{"fact": "context.x", "op": "in", "value": "FR"}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("in with a nested array", when(#"{"fact": "context.x", "op": "in", "value": ["FR", ["DE"]]}"#), .invalidOperand, at: "rules[0].when.value[1]"),
        InvalidCase("notIn with an object element", when(#"{"fact": "context.x", "op": "notIn", "value": [{}]}"#), .invalidOperand, at: "rules[0].when.value[0]"),
        InvalidCase("contains with an array", when(#"{"fact": "context.x", "op": "contains", "value": ["a"]}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("exists with a string", when(#"{"fact": "context.x", "op": "exists", "value": "yes"}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("inCidr with a number", when(#"{"fact": "signals.ip", "op": "inCidr", "value": 10}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("inCidr with a number element", when(#"{"fact": "signals.ip", "op": "inCidr", "value": ["10.0.0.0/8", 10]}"#), .invalidOperand, at: "rules[0].when.value[1]"),
        InvalidCase("bad CIDR", when(#"{"fact": "signals.ip", "op": "inCidr", "value": "10.0.0.0/33"}"#), .invalidCIDR, at: "rules[0].when.value"),
        InvalidCase("CIDR with host bits", when(#"{"fact": "signals.ip", "op": "inCidr", "value": ["192.168.1.1/16"]}"#), .invalidCIDR, at: "rules[0].when.value[0]"),
        InvalidCase("withinKm with a number", when(#"{"fact": "signals.geo", "op": "withinKm", "value": 50}"#), .invalidOperand, at: "rules[0].when.value"),
        InvalidCase("withinKm without km", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"of": "hq"}}"#), .missingMember, at: "rules[0].when.value.km"),
        InvalidCase("withinKm without of", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5}}"#), .missingMember, at: "rules[0].when.value.of"),
        InvalidCase("withinKm km zero", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 0, "of": "hq"}}"#), .invalidOperand, at: "rules[0].when.value.km"),
        InvalidCase("withinKm km a string", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": "5", "of": "hq"}}"#), .invalidOperand, at: "rules[0].when.value.km"),
        InvalidCase("withinKm unknown member", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": "hq", "unit": "mi"}}"#), .unknownMember, at: "rules[0].when.value.unit"),
        InvalidCase(
            "withinKm latitude out of range", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": {"lat": 95, "lon": 0}}}"#),
            .invalidOperand, at: "rules[0].when.value.of.lat"),
        InvalidCase(
            "withinKm longitude a string", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": {"lat": 5, "lon": "0"}}}"#),
            .invalidOperand, at: "rules[0].when.value.of.lon"),
        InvalidCase(
            "withinKm point with an altitude", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": {"lat": 5, "lon": 0, "alt": 3}}}"#),
            .unknownMember, at: "rules[0].when.value.of.alt"),
        InvalidCase("withinKm of a number", when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": 3}}"#), .invalidOperand, at: "rules[0].when.value.of"),
        InvalidCase(
            "unknown location list", when(#"{"any": [{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": "branches"}}]}"#),
            .unknownLocationList, at: "rules[0].when.any[0].value.of"),
    ]

    @Test(arguments: cases)
    func refuses(_ row: InvalidCase) throws {
        let error = try #require(try RulesTestSupport.error(row.ruleset, kind: row.kind, locations: ["hq": []]))
        #expect(error.code == row.code)
        #expect(error.path == row.path)
        #expect(!error.message.isEmpty)
        #expect(error.description == "\(row.code) at \(row.path): \(error.message)")
    }

    @Test func theSameRulesetsAreValidOnceFixed() throws {
        for fixed in [
            Self.rule(#""action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]"#),
            Self.when(#"{"fact": "signals.geo", "op": "withinKm", "value": {"km": 5, "of": "branches"}}"#),
            Self.when(#"{"fact": "user.a.b.c.d.e.f.g.h", "op": "exists", "value": true}"#),
            Self.when(#"{"fact": "user.\#(String(repeating: "s", count: 64))", "op": "exists", "value": true}"#),
            #"{"rules": [{"name": "\#(String(repeating: "n", count: 64))", "action": "DENY"}]}"#,
            #"{"rules": [{"name": "A-z 0.9_", "action": "DENY"}]}"#,
        ] {
            #expect(try RulesTestSupport.error(fixed, locations: ["branches": []]) == nil, "\(fixed)")
        }
    }
}
