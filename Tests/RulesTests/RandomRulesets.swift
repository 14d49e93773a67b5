import TestRandom
import Rules
import JSON

/// Random rulesets and facts over a small vocabulary of facts, with values of the right type
/// most of the time and of the wrong type, null or missing otherwise, so that every operator
/// meets matches, misses, mismatches and absences.
struct RandomRulesets {
    var random: SplitMix64

    static let locations: [String: [GeoPoint]] = [
        "offices": [GeoPoint(latitude: 48.8566, longitude: 2.3522)!, GeoPoint(latitude: 40.7128, longitude: -74.0060)!],
        "nowhere": [],
    ]
    static let countries: [JSONValue] = ["FR", "DE", "IT", "US", "\u{E9}", "e\u{301}", ""]
    static let methods: [JSONValue] = ["fido2", "sms_otp", "totp", 1, .null, true]
    static let blocks = ["10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32", "0.0.0.0/1", "::ffff:0:0/96", "203.0.113.7/32"]
    static let addresses: [JSONValue] = [
        "10.1.2.3", "192.168.4.5", "203.0.113.7", "203.0.113.8", "8.8.8.8", "200.1.1.1", "::ffff:10.9.9.9",
        "2001:db8::5", "2001:db9::5", "::1", "not an ip", "010.1.2.3", 7,
    ]
    static let versions: [JSONValue] = ["13.1", "14.0", "15.2", "16", "17.5", "9", "15"]

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &random)] }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }
    mutating func number() -> JSONValue {
        chance(0.7) ? .int(Int64.random(in: 0...3000, using: &random)) : .double(Double(Int.random(in: 0...6000, using: &random)) / 2)
    }
    mutating func point() -> JSONValue {
        let base = pick([(48.8566, 2.3522), (51.5074, -0.1278), (40.7128, -74.0060), (-33.8688, 151.2093)])
        return ["lat": .double(base.0 + Double.random(in: -3...3, using: &random)), "lon": .double(base.1 + Double.random(in: -3...3, using: &random))]
    }

    // MARK: - Rulesets

    mutating func ruleset() -> Ruleset {
        let count = Int.random(in: 1...12, using: &random)
        let rules = (0..<count).map { i -> Rule in
            let action = pick([RuleAction.allow, .deny, .triggerAuthentication(sequences: [["fido2"], ["totp", "sms_otp"]], maxTimeSeconds: chance(0.5) ? 60 : nil)])
            return Rule(name: "r\(i)", when: i == count - 1 && chance(0.3) ? nil : condition(depth: 1), action: action)
        }
        return Ruleset(rules: rules)
    }

    mutating func condition(depth: Int) -> Condition {
        if depth >= 4 || chance(0.55) { return .predicate(predicate()) }
        let children = (0..<Int.random(in: 0...3, using: &random)).map { _ in condition(depth: depth + 1) }
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return .all(children)
        case 1: return .any(children)
        default: return .not(children.first ?? .predicate(predicate()))
        }
    }

    mutating func predicate() -> FactPredicate {
        func make(_ fact: String, _ op: RuleOperator, _ value: JSONValue) -> FactPredicate {
            FactPredicate(fact: FactPath(fact)!, op: op, value: value)
        }
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            let op = pick([RuleOperator.eq, .ne, .gt, .gte, .lt, .lte, .in, .notIn, .exists])
            switch op {
            case .in, .notIn: return make("context.amount", op, .array((0..<3).map { _ in number() }))
            case .exists: return make("context.amount", op, .bool(chance(0.5)))
            default: return make("context.amount", op, number())
            }
        case 1:
            let op = pick([RuleOperator.eq, .ne, .gt, .lt, .in, .notIn, .contains])
            switch op {
            case .in, .notIn: return make("signals.country", op, .array([pick(Self.countries), pick(Self.countries)]))
            case .contains: return make("signals.country", op, pick(["F", "", "\u{E9}", "e"]))
            default: return make("signals.country", op, pick(Self.countries))
            }
        case 2:
            if chance(0.2) { return make("user.registeredMethods", .exists, .bool(chance(0.5))) }
            return make("user.registeredMethods", .contains, pick(Self.methods + [false]))
        case 3:
            let value: JSONValue = chance(0.5) ? .string(pick(Self.blocks)) : .array((0..<2).map { _ in .string(pick(Self.blocks)) })
            return make("signals.ip", .inCidr, value)
        case 4:
            let of: JSONValue = chance(0.5) ? point() : .string(pick(["offices", "nowhere"]))
            return make("signals.geo", .withinKm, ["km": .double(Double.random(in: 1...1500, using: &random)), "of": of])
        case 5:
            if chance(0.3) { return make("signals.newDevice", pick([.in, .notIn]), pick([[true], [false, nil]])) }
            return make("signals.newDevice", pick([.eq, .ne]), pick([true, false, nil]))
        case 6: return make("signals.osVersion", pick([.lt, .gte, .eq]), pick(Self.versions + [15]))
        default:
            if chance(0.3) { return make("context.maybe", .exists, .bool(chance(0.5))) }
            return make("context.maybe", pick([.eq, .ne]), pick([nil, true, false, 0]))
        }
    }

    // MARK: - Facts

    mutating func facts() -> JSONValue {
        var signals: [String: JSONValue] = [:]
        var context: [String: JSONValue] = [:]
        var user: [String: JSONValue] = [:]
        if chance(0.85) { context["amount"] = chance(0.85) ? number() : pick(["1500", .null, true]) }
        if chance(0.85) { signals["country"] = chance(0.9) ? pick(Self.countries) : 33 }
        if chance(0.85) {
            user["registeredMethods"] = chance(0.85)
                ? .array((0..<Int.random(in: 0...3, using: &random)).map { _ in pick(Self.methods) }) : "fido2 totp"
        }
        if chance(0.85) { signals["ip"] = pick(Self.addresses) }
        if chance(0.85) { signals["geo"] = chance(0.85) ? point() : pick([["lat": 95, "lon": 0], "48,2", ["lat": 48]]) }
        if chance(0.85) { signals["newDevice"] = pick([true, false, "true", .null]) }
        if chance(0.85) { signals["osVersion"] = pick(Self.versions + [15, 16.5]) }
        if chance(0.5) { context["maybe"] = pick([nil, 0, true, false]) }
        var facts: [String: JSONValue] = ["signals": .object(signals), "context": .object(context), "user": .object(user)]
        if chance(0.05) { facts["context"] = 5 }
        return .object(facts)
    }
}
