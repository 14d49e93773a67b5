import JSON

/// Why a ruleset decided what it did for one request: each rule tried, in order, up to the one
/// that matched (every rule when none did), and for each rule that did not match, the condition
/// that failed with the fact's actual value.
///
/// Made by ``CompiledRuleset/explain(_:)``, for administrators testing a ruleset and for support;
/// its ``decision`` is always the one ``CompiledRuleset/evaluate(_:)-(JSONValue)`` gives for the
/// same facts. Encodes as
///
/// ```json
/// {"decision": {"action": "ALLOW", "matchedRule": "office"},
///  "rules": [
///    {"rule": "big-amount", "matched": false,
///     "because": {"path": "when.all[0]", "fact": "context.transactionAmount", "op": "gt",
///                 "value": 1000, "actual": 50}},
///    {"rule": "office", "matched": true}]}
/// ```
///
/// - Important: `actual` carries the request's facts (IP addresses, positions). Treat a trace
///   as personal data: show it to the tenant's administrators, do not log it.
public struct RuleTrace: Sendable, Hashable, Encodable {
    /// The decision, as evaluation gives it.
    public let decision: RuleDecision
    /// The rules tried, in order.
    public let rules: [Entry]

    /// One rule tried.
    public struct Entry: Sendable, Hashable, Encodable {
        /// The rule's name.
        public let rule: String
        /// Whether it matched (only the last entry can have).
        public let matched: Bool
        /// For a rule that did not match, the condition that failed.
        public let because: Failure?

        /// `{"rule": …, "matched": …, "because": …}`, without `because` for a match.
        public var json: JSONValue {
            var members: [String: JSONValue] = ["rule": .string(rule), "matched": .bool(matched)]
            if let because { members["because"] = because.json }
            return .object(members)
        }

        /// Encodes ``json``.
        public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
    }

    /// The condition that made a rule fail.
    ///
    /// - A failed fact test reports itself: its path, fact, operator, value and the fact's
    ///   actual value (or `missing`).
    /// - A failed `all` reports its first failing condition (evaluation stops there).
    /// - A failed `any` reports itself with every alternative's failure (none for an empty `any`).
    /// - A failed `not` reports itself (operator `not`) with the fact and actual value of the
    ///   test it negates, when that is a fact test.
    public struct Failure: Sendable, Hashable, Encodable {
        /// The condition's path in its rule, e.g. `when.all[0]`.
        public let path: String
        /// The operator (`gt`, `inCidr`…), or `any` or `not`.
        public let op: String
        /// The fact tested, for fact tests and `not` of a fact test.
        public let fact: String?
        /// The operand, for fact tests.
        public let value: JSONValue?
        /// The fact's value in the request, when present.
        public let actual: JSONValue?
        /// Whether the fact was missing from the request.
        public let missing: Bool
        /// For `any`: why each alternative failed.
        public let alternatives: [Failure]

        /// The failure of a fact test, or of `not` over one.
        init(path: String, op: String, fact: String?, value: JSONValue?, actual: JSONValue?, missing: Bool) {
            self.path = path
            self.op = op
            self.fact = fact
            self.value = value
            self.actual = actual
            self.missing = missing
            self.alternatives = []
        }

        /// The failure of `any`.
        init(path: String, alternatives: [Failure]) {
            self.path = path
            self.op = "any"
            self.fact = nil
            self.value = nil
            self.actual = nil
            self.missing = false
            self.alternatives = alternatives
        }

        /// The failure as JSON: members without a value are left out; `missing` appears only
        /// when true, `alternatives` only for `any`.
        public var json: JSONValue {
            var members: [String: JSONValue] = ["path": .string(path), "op": .string(op)]
            if let fact { members["fact"] = .string(fact) }
            if let value { members["value"] = value }
            if let actual { members["actual"] = actual }
            if missing { members["missing"] = true }
            if op == "any" { members["alternatives"] = .array(alternatives.map(\.json)) }
            return .object(members)
        }

        /// Encodes ``json``.
        public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
    }

    /// The trace as JSON: `{"decision": …, "rules": […]}`.
    public var json: JSONValue {
        ["decision": decision.json, "rules": .array(rules.map(\.json))]
    }

    /// Encodes ``json``.
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
