import JSON

/// When a rule applies: a test of one fact, or `all`, `any` or `not` of other conditions.
///
/// On the wire a condition is exactly one of
///
/// ```json
/// {"all": [c, ...]}     every one matches; an empty list matches
/// {"any": [c, ...]}     at least one matches; an empty list does not match
/// {"not": c}            c does not match
/// {"fact": "context.transactionAmount", "op": "gt", "value": 1000}
/// ```
///
/// Conditions nest at most ``Ruleset/Limits/conditionDepth`` levels (a rule's `when` is level
/// 1) and a ruleset has at most ``Ruleset/Limits/conditionNodes`` of them in all.
///
/// Its ``description`` is a compact form for logs and messages:
/// `all(context.transactionAmount gt 1000, not(signals.newDevice eq false))`.
public indirect enum Condition: Sendable, Hashable, CustomStringConvertible {
    /// Matches when every condition matches (and when there are none).
    case all([Condition])
    /// Matches when at least one condition matches (never when there are none).
    case any([Condition])
    /// Matches when the condition does not.
    case not(Condition)
    /// Matches when the fact passes the test.
    case predicate(FactPredicate)

    /// The condition as its wire JSON.
    public var json: JSONValue {
        switch self {
        case .all(let conditions): ["all": .array(conditions.map(\.json))]
        case .any(let conditions): ["any": .array(conditions.map(\.json))]
        case .not(let condition): ["not": condition.json]
        case .predicate(let predicate): predicate.json
        }
    }

    /// A compact form: `fact op value` for tests (the value as compact JSON), `all(…)`,
    /// `any(…)` and `not(…)` around the others.
    public var description: String {
        switch self {
        case .all(let conditions): "all(\(conditions.map(\.description).joined(separator: ", ")))"
        case .any(let conditions): "any(\(conditions.map(\.description).joined(separator: ", ")))"
        case .not(let condition): "not(\(condition))"
        case .predicate(let predicate): "\(predicate.fact) \(predicate.op.rawValue) \(predicate.value.jsonString)"
        }
    }

    /// The number of conditions in this one, itself included, as counted against
    /// ``Ruleset/Limits/conditionNodes``.
    public var nodeCount: Int {
        switch self {
        case .all(let conditions), .any(let conditions): 1 + conditions.reduce(0) { $0 + $1.nodeCount }
        case .not(let condition): 1 + condition.nodeCount
        case .predicate: 1
        }
    }

    // MARK: - Parsing

    /// Reads a condition, checking the limits on depth and count before looking inside, so that
    /// a hostile document cannot make the reader recurse deeply or work long.
    ///
    /// - Parameters:
    ///   - value: The JSON of the condition.
    ///   - path: Its path, e.g. `rules[2].when.any[0]`.
    ///   - depth: Its level: 1 for a rule's `when`.
    ///   - count: Condition nodes read so far in the ruleset; incremented.
    /// - Throws: A ``RulesetError`` naming the first problem found.
    static func parse(_ value: JSONValue, at path: NodePath, depth: Int, count: inout Int) throws(RulesetError)
        -> Condition
    {
        try checkLimits(at: path, depth: depth, count: &count)
        guard case .object(let members) = value else {
            throw RulesetError(.invalidType, at: path, "a condition must be a JSON object")
        }
        if members["fact"] != nil || members["op"] != nil || members["value"] != nil {
            return .predicate(try FactPredicate(json: value, at: path))
        }
        for combinator in ["all", "any", "not"] where members[combinator] != nil {
            let reader = try ObjectReader(
                value, at: path, what: "a condition with \(combinator)", allowed: [combinator])
            let inner = path.member(combinator)
            if combinator == "not" {
                return .not(try parse(reader.members["not"]!, at: inner, depth: depth + 1, count: &count))
            }
            guard case .array(let elements) = reader.members[combinator]! else {
                throw RulesetError(.invalidType, at: inner, "\(combinator) must be an array of conditions")
            }
            var conditions: [Condition] = []
            conditions.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() {
                conditions.append(try parse(element, at: inner.index(i), depth: depth + 1, count: &count))
            }
            return combinator == "all" ? .all(conditions) : .any(conditions)
        }
        if let unknown = members.keys.min() {
            throw RulesetError(
                .unknownMember, at: path.member(unknown),
                "\(RulesetError.quote(unknown)) is not a member of a condition; expected all, any, not or fact, op, value")
        }
        throw RulesetError(.missingMember, at: path, "a condition needs all, any, not, or fact with op and value")
    }

    /// Counts one more condition node at `depth` and refuses it past the limits.
    ///
    /// - Throws: `limit_exceeded` at `path`.
    static func checkLimits(at path: NodePath, depth: Int, count: inout Int) throws(RulesetError) {
        guard depth <= Ruleset.Limits.conditionDepth else {
            throw RulesetError(
                .limitExceeded, at: path, "conditions nest at most \(Ruleset.Limits.conditionDepth) levels deep")
        }
        count += 1
        guard count <= Ruleset.Limits.conditionNodes else {
            throw RulesetError(
                .limitExceeded, at: path, "a ruleset has at most \(Ruleset.Limits.conditionNodes) conditions in all")
        }
    }
}
