import JSON

/// A test of one fact: `{"fact": "context.transactionAmount", "op": "gt", "value": 1000}`.
///
/// `value` is kept as written (so that the ruleset reads back as it was stored); what it may be
/// depends on ``op`` and is checked when the predicate is read and again when it is compiled.
public struct FactPredicate: Sendable, Hashable {
    /// The fact tested.
    public var fact: FactPath
    /// How it is tested.
    public var op: RuleOperator
    /// What it is tested against.
    public var value: JSONValue

    /// A predicate; `value` is checked against `op` by ``Ruleset/compile(for:locations:)``.
    ///
    /// - Parameters:
    ///   - fact: The fact tested.
    ///   - op: How it is tested.
    ///   - value: What it is tested against.
    public init(fact: FactPath, op: RuleOperator, value: JSONValue) {
        self.fact = fact
        self.op = op
        self.value = value
    }

    /// The predicate as its wire JSON.
    public var json: JSONValue {
        ["fact": .string(fact.description), "op": .string(op.rawValue), "value": value]
    }

    /// Reads a predicate and checks its operand (location list names are checked at compile).
    ///
    /// - Throws: `unknown_member`, `missing_member`, `invalid_type`, `invalid_fact`,
    ///   `unknown_operator`, `invalid_operand`, `invalid_cidr` or `limit_exceeded`.
    init(json: JSONValue, at path: NodePath) throws(RulesetError) {
        let reader = try ObjectReader(json, at: path, what: "a fact condition", allowed: ["fact", "op", "value"])
        let factText = try reader.requiredString("fact", "a fact path such as context.transactionAmount")
        switch FactPath.parse(factText) {
        case .success(let fact): self.fact = fact
        case .failure(let problem):
            throw RulesetError(
                .invalidFact, at: path.member("fact"), "the fact path \(RulesetError.quote(factText)) \(problem.reason)")
        }
        let opText = try reader.requiredString("op", "one of \(RuleOperator.list)")
        guard let op = RuleOperator(rawValue: opText) else {
            throw RulesetError(
                .unknownOperator, at: path.member("op"),
                "\(RulesetError.quote(opText)) is not an operator; expected one of \(RuleOperator.list)")
        }
        self.op = op
        self.value = try reader.required("value", op.operandDescription)
        _ = try Operand.compile(op, value, at: path.member("value"), locations: nil)
    }
}

/// How a predicate tests its fact.
///
/// A missing fact (absent, or under something that is not an object) fails every test except
/// `ne`, `notIn` and `exists: false`; a fact of a type the test does not take fails it too.
public enum RuleOperator: String, Sendable, Hashable, CaseIterable {
    /// Equal, as JSON: numbers numerically (1 equals 1.0), strings by Unicode scalars.
    /// `value`: null, a Boolean, a number or a string.
    case eq
    /// Not ``eq``: true for a missing fact.
    case ne
    /// Greater than: numbers with numbers, strings with strings (by Unicode scalars).
    /// `value`: a number or a string.
    case gt
    /// Greater than or equal; as ``gt``.
    case gte
    /// Less than; as ``gt``.
    case lt
    /// Less than or equal; as ``gt``.
    case lte
    /// Equal (as ``eq``) to one of a list. `value`: an array of at most
    /// ``Ruleset/Limits/listEntries`` nulls, Booleans, numbers or strings.
    case `in`
    /// Not ``in``: true for a missing fact.
    case notIn
    /// The fact is an array with an element equal to `value` (as ``eq``), or a string with
    /// `value` as a substring. `value`: null, a Boolean, a number or a string.
    case contains
    /// The fact is present and not null (`value: true`), or absent or null (`value: false`).
    case exists
    /// The fact is an IP address string inside a CIDR block. `value`: a block (`"10.0.0.0/8"`)
    /// or an array of them; see ``CIDRBlock`` and ``IPAddress``.
    case inCidr
    /// The fact is a `{"lat": …, "lon": …}` object within a great-circle distance of a point or
    /// of any point of a named location list. `value`: `{"km": 50, "of": {"lat": …, "lon": …}}`
    /// or `{"km": 50, "of": "listName"}`.
    case withinKm

    /// The operators, for messages: `eq, ne, gt, …`.
    static let list = allCases.map(\.rawValue).joined(separator: ", ")

    /// What `value` must be, for messages.
    var operandDescription: String {
        switch self {
        case .eq, .ne, .contains: "null, a Boolean, a number or a string"
        case .gt, .gte, .lt, .lte: "a number or a string"
        case .in, .notIn:
            "an array of at most \(Ruleset.Limits.listEntries) nulls, Booleans, numbers or strings"
        case .exists: "true or false"
        case .inCidr: "a CIDR block such as \"10.0.0.0/8\", or an array of them"
        case .withinKm: "{\"km\": distance, \"of\": {\"lat\": …, \"lon\": …} or a location list name}"
        }
    }
}
