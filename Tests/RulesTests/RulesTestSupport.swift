import Foundation
import Rules
import Testing
import JSON

/// Helpers shared by the suites: JSON from text, one-rule rulesets, facts objects.
enum RulesTestSupport {
    /// The JSON value of `text`, decoded the way the service decodes request bodies.
    static func json(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    /// Reads and compiles a ruleset given as JSON text.
    static func compile(
        _ text: String, kind: Ruleset.Kind = .authentication, locations: [String: [GeoPoint]] = [:]
    ) throws -> CompiledRuleset {
        try Ruleset(json: json(text)).compile(for: kind, locations: locations)
    }

    /// The error reading and compiling `text` raises, or `nil` when it is valid.
    static func error(
        _ text: String, kind: Ruleset.Kind = .authentication, locations: [String: [GeoPoint]] = [:]
    ) throws -> RulesetError? {
        let value = try json(text)
        do {
            _ = try Ruleset(json: value).compile(for: kind, locations: locations)
            return nil
        } catch {
            return error
        }
    }

    /// A ruleset whose one rule, `hit`, denies when `fact op value`.
    static func single(fact: String = "context.x", op: String, value: JSONValue, locations: [String: [GeoPoint]] = [:])
        throws -> CompiledRuleset
    {
        let when: JSONValue = ["fact": .string(fact), "op": .string(op), "value": value]
        let ruleset = try Ruleset(json: ["rules": [["name": "hit", "when": when, "action": "DENY"]]])
        return try ruleset.compile(for: .authentication, locations: locations)
    }

    /// Facts with `value` at `context.x`, or without it when `nil`.
    static func facts(x value: JSONValue?) -> JSONValue {
        guard let value else { return ["context": [:], "signals": [:], "user": [:], "time": [:]] }
        return ["context": ["x": value], "signals": [:], "user": [:], "time": [:]]
    }

    /// Whether `compiled`'s rule `hit` matched `facts`, checking that evaluate, prepare-then-evaluate
    /// and explain all say the same.
    static func hits(_ compiled: CompiledRuleset, _ facts: JSONValue, sourceLocation: SourceLocation = #_sourceLocation)
        -> Bool
    {
        let decision = compiled.evaluate(facts)
        #expect(compiled.evaluate(compiled.prepare(facts)) == decision, sourceLocation: sourceLocation)
        #expect(compiled.explain(facts).decision == decision, sourceLocation: sourceLocation)
        return decision.matchedRule == "hit"
    }
}

/// One row of a table of invalid rulesets: the document, and the code and path it is refused with.
struct InvalidCase: Sendable, CustomTestStringConvertible {
    let label: String
    let ruleset: String
    let kind: Ruleset.Kind
    let code: RulesetError.Code
    let path: String

    init(_ label: String, _ ruleset: String, kind: Ruleset.Kind = .authentication, _ code: RulesetError.Code, at path: String) {
        self.label = label
        self.ruleset = ruleset
        self.kind = kind
        self.code = code
        self.path = path
    }

    var testDescription: String { label }
}

/// One row of a table of operator tests: a fact value (`nil` for missing) and whether it matches.
struct OperatorCase: Sendable, CustomTestStringConvertible {
    let op: String
    let value: JSONValue
    let fact: JSONValue?
    let matches: Bool
    let note: String

    init(_ op: String, _ value: JSONValue, _ fact: JSONValue?, _ matches: Bool, _ note: String) {
        self.op = op
        self.value = value
        self.fact = fact
        self.matches = matches
        self.note = note
    }

    var testDescription: String {
        "\(op) \(value.jsonString) on \(fact?.jsonString ?? "missing"): \(matches) (\(note))"
    }
}
