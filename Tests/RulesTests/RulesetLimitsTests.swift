import Rules
import Testing
import JSON

/// The limits, at and just past each one, and the checks compiling applies to rulesets built
/// in code.
@Suite struct RulesetLimitsTests {
    static let leaf: JSONValue = ["fact": "context.amount", "op": "gt", "value": 1]

    static func ruleset(_ rules: [JSONValue]) -> JSONValue { ["rules": .array(rules)] }

    static func rule(_ name: String, when: JSONValue? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["name": .string(name), "action": "DENY"]
        if let when { members["when"] = when }
        return .object(members)
    }

    /// Reads and compiles, returning the error or `nil`.
    static func error(_ json: JSONValue) -> RulesetError? {
        do {
            _ = try Ruleset(json: json).compile(for: .authentication)
            return nil
        } catch {
            return error
        }
    }

    @Test func rules() throws {
        let rules = (0..<201).map { Self.rule("r\($0)") }
        #expect(Self.error(Self.ruleset(Array(rules.prefix(200)))) == nil)
        let error = try #require(Self.error(Self.ruleset(rules)))
        #expect(error.code == .limitExceeded)
        #expect(error.path == "rules")
    }

    @Test func depth() throws {
        func nested(_ levels: Int) -> JSONValue {
            (1..<levels).reduce(Self.leaf) { inner, _ in ["not": inner] }
        }
        #expect(Self.error(Self.ruleset([Self.rule("r", when: nested(16))])) == nil)
        let error = try #require(Self.error(Self.ruleset([Self.rule("r", when: nested(17))])))
        #expect(error.code == .limitExceeded)
        #expect(error.path == "rules[0].when" + String(repeating: ".not", count: 16))
        // Hostile depth is refused without deep recursion.
        let hostile = (0..<5_000).reduce(Self.leaf) { inner, _ in ["all": [inner]] }
        #expect(Self.error(Self.ruleset([Self.rule("r", when: hostile)]))?.code == .limitExceeded)
    }

    @Test func conditionNodes() throws {
        // 1 + 999 nodes in the first rule, then one more in the second.
        let wide = Self.rule("wide", when: ["all": .array(Array(repeating: Self.leaf, count: 999))])
        #expect(Self.error(Self.ruleset([wide])) == nil)
        #expect(Self.error(Self.ruleset([wide, Self.rule("none")])) == nil)
        let error = try #require(Self.error(Self.ruleset([wide, Self.rule("one", when: Self.leaf)])))
        #expect(error.code == .limitExceeded)
        #expect(error.path == "rules[1].when")
    }

    @Test(arguments: ["in", "notIn", "inCidr"])
    func listEntries(op: String) throws {
        let entry: JSONValue = op == "inCidr" ? "10.0.0.0/8" : "x"
        func list(_ count: Int) -> JSONValue {
            Self.ruleset([Self.rule("r", when: ["fact": "signals.ip", "op": .string(op), "value": .array(Array(repeating: entry, count: count))])])
        }
        #expect(Self.error(list(1000)) == nil)
        let error = try #require(Self.error(list(1001)))
        #expect(error.code == .limitExceeded)
        #expect(error.path == "rules[0].when.value")
    }

    @Test func stringLength() throws {
        func eq(_ text: String) -> JSONValue {
            Self.ruleset([Self.rule("r", when: ["fact": "context.x", "op": "eq", "value": .string(text)])])
        }
        // Characters are Unicode scalars: 1024 two-byte characters are fine.
        #expect(Self.error(eq(String(repeating: "é", count: 1024))) == nil)
        #expect(Self.error(eq(String(repeating: "a", count: 1024))) == nil)
        let error = try #require(Self.error(eq(String(repeating: "a", count: 1025))))
        #expect(error.code == .limitExceeded)
        #expect(error.path == "rules[0].when.value")
        let inList = Self.ruleset([
            Self.rule("r", when: ["fact": "context.x", "op": "in", "value": ["a", "b", .string(String(repeating: "é", count: 1025))]])
        ])
        let listError = try #require(Self.error(inList))
        #expect(listError.code == .limitExceeded)
        #expect(listError.path == "rules[0].when.value[2]")
    }

    // MARK: - Rulesets built in code

    static let amount = FactPath("context.amount")!

    @Test(arguments: [
        (Ruleset(rules: [Rule(name: "bad name!", action: .deny)]), RulesetError.Code.invalidRuleName, "rules[0].name"),
        (Ruleset(rules: [Rule(name: "a", action: .deny), Rule(name: "a", action: .allow)]), .duplicateRuleName, "rules[1].name"),
        (Ruleset(rules: [Rule(name: "a", action: .triggerAuthentication(sequences: [], maxTimeSeconds: nil))]), .invalidValue, "rules[0].sequences"),
        (Ruleset(rules: [Rule(name: "a", action: .triggerAuthentication(sequences: [["fido2"]], maxTimeSeconds: 0))]), .invalidValue, "rules[0].maxTimeSeconds"),
        (Ruleset(rules: [Rule(name: "a", action: .triggerAuthentication(sequences: [["Fido"]], maxTimeSeconds: nil))]), .invalidMethodName, "rules[0].sequences[0][0]"),
        (Ruleset(rules: [Rule(name: "a", action: .ignoreRegistration)]), .actionNotAllowed, "rules[0].action"),
        (
            Ruleset(rules: [Rule(name: "a", when: .any([.predicate(FactPredicate(fact: amount, op: .gt, value: [1]))]), action: .deny)]),
            .invalidOperand, "rules[0].when.any[0].value"
        ),
        (
            Ruleset(rules: [Rule(name: "a", when: .predicate(FactPredicate(fact: amount, op: .inCidr, value: "10.0.0.1/8")), action: .deny)]),
            .invalidCIDR, "rules[0].when.value"
        ),
        (
            Ruleset(rules: [Rule(name: "a", when: .predicate(FactPredicate(fact: amount, op: .eq, value: .double(.nan))), action: .deny)]),
            .invalidOperand, "rules[0].when.value"
        ),
        (
            Ruleset(rules: [Rule(name: "a", when: (0..<16).reduce(Condition.all([])) { inner, _ in .not(inner) }, action: .deny)]),
            .limitExceeded, "rules[0].when" + String(repeating: ".not", count: 16)
        ),
    ])
    func compilingChecksRulesetsBuiltInCode(ruleset: Ruleset, code: RulesetError.Code, path: String) throws {
        let error = #expect(throws: RulesetError.self) { try ruleset.compile(for: .authentication) }
        #expect(error?.code == code)
        #expect(error?.path == path)
        // Reading the same ruleset back from its JSON refuses it at the same place (the kind
        // check aside, which needs the kind).
        if code != .actionNotAllowed {
            let readError = #expect(throws: RulesetError.self) { try Ruleset(json: ruleset.json) }
            #expect(readError?.path == path)
        }
    }
}
