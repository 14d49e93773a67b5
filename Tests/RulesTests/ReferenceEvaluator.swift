import Rules
import JSON
import TestRandom

/// The documented semantics written as plainly as possible, straight over the model and the
/// JSON facts: no interning, no slots, no precomputation. Compiled evaluation must agree with it.
struct ReferenceEvaluator {
    let ruleset: Ruleset
    let kind: Ruleset.Kind
    let locations: [String: [GeoPoint]]

    func decide(_ facts: JSONValue) -> RuleDecision {
        for rule in ruleset.rules where rule.when.map({ matches($0, facts) }) ?? true {
            return RuleDecision(action: rule.action, matchedRule: rule.name)
        }
        return kind.defaultDecision
    }

    func matches(_ condition: Condition, _ facts: JSONValue) -> Bool {
        switch condition {
        case .all(let conditions): conditions.allSatisfy { matches($0, facts) }
        case .any(let conditions): conditions.contains { matches($0, facts) }
        case .not(let inner): !matches(inner, facts)
        case .predicate(let predicate): test(predicate, predicate.fact.resolve(in: facts))
        }
    }

    func test(_ predicate: FactPredicate, _ fact: JSONValue?) -> Bool {
        let value = predicate.value
        switch predicate.op {
        case .eq: return fact.map { Self.equal($0, value) } ?? false
        case .ne: return !(fact.map { Self.equal($0, value) } ?? false)
        case .gt: return Self.order(fact, value).map { $0 > 0 } ?? false
        case .gte: return Self.order(fact, value).map { $0 >= 0 } ?? false
        case .lt: return Self.order(fact, value).map { $0 < 0 } ?? false
        case .lte: return Self.order(fact, value).map { $0 <= 0 } ?? false
        case .in: return fact.map { fact in value.arrayValue!.contains { Self.equal(fact, $0) } } ?? false
        case .notIn: return !(fact.map { fact in value.arrayValue!.contains { Self.equal(fact, $0) } } ?? false)
        case .contains:
            switch fact {
            case .array(let elements)?: return elements.contains { Self.equal($0, value) }
            case .string(let text)?:
                guard case .string(let needle) = value else { return false }
                return Self.substring(Array(needle.utf8), of: Array(text.utf8))
            default: return false
            }
        case .exists:
            let present = fact != nil && fact != .null
            return present == value.boolValue!
        case .inCidr:
            guard let text = fact?.stringValue, let address = IPAddress(text) else { return false }
            let blocks = value.stringValue.map { [$0] } ?? value.stringArrayValue!
            return blocks.contains { CIDRBlock($0)!.contains(address) }
        case .withinKm:
            guard let fact, let position = GeoPoint(json: fact), case .object(let operand) = value else { return false }
            let km = operand["km"]!.doubleValue!
            let points = operand["of"]!.stringValue.map { locations[$0]! } ?? [GeoPoint(json: operand["of"]!)!]
            return points.contains { $0.distanceKm(to: position) <= km }
        }
    }

    /// JSON equality of a fact and a scalar: numbers numerically, strings by bytes.
    static func equal(_ fact: JSONValue, _ value: JSONValue) -> Bool {
        switch (fact, value) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.string(let a), .string(let b)): Array(a.utf8) == Array(b.utf8)
        default:
            if let a = fact.doubleValue, let b = value.doubleValue { a == b } else { false }
        }
    }

    /// The sign of fact − value for two numbers or two strings (by bytes), else `nil`.
    static func order(_ fact: JSONValue?, _ value: JSONValue) -> Int? {
        if let a = fact?.doubleValue, let b = value.doubleValue { return a < b ? -1 : a > b ? 1 : 0 }
        if case .string(let a)? = fact, case .string(let b) = value {
            let x = Array(a.utf8)
            let y = Array(b.utf8)
            return x == y ? 0 : x.lexicographicallyPrecedes(y) ? -1 : 1
        }
        return nil
    }

    static func substring(_ needle: [UInt8], of haystack: [UInt8]) -> Bool {
        if needle.isEmpty { return true }
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

