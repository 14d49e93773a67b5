import Rules
import Testing
import JSON

/// Every operator on matching, non-matching, missing and mistyped facts, through a one-rule
/// ruleset (so through reading, compiling, preparing, evaluating and explaining).
@Suite struct OperatorTests {
    static let paris: JSONValue = ["lat": 48.8566, "lon": 2.3522]
    static let london: JSONValue = ["lat": 51.5074, "lon": -0.1278]

    static let cases: [OperatorCase] = [
        // eq: JSON equality, numbers numerically, strings by scalars; missing is false.
        OperatorCase("eq", 1000, 1000, true, "equal integers"),
        OperatorCase("eq", 1, 1.0, true, "1 equals 1.0"),
        OperatorCase("eq", 1.5, 1.5, true, "equal doubles"),
        OperatorCase("eq", 1000, 999, false, "different numbers"),
        OperatorCase("eq", 1000, nil, false, "missing"),
        OperatorCase("eq", 1000, "1000", false, "string fact, number value"),
        OperatorCase("eq", "fido2", "fido2", true, "equal strings"),
        OperatorCase("eq", "fido2", "FIDO2", false, "case matters"),
        OperatorCase("eq", "\u{E9}", "e\u{301}", false, "scalars, not canonical equivalence"),
        OperatorCase("eq", true, true, true, "equal Booleans"),
        OperatorCase("eq", true, 1, false, "number fact, Boolean value"),
        OperatorCase("eq", nil, nil as JSONValue?, false, "missing is not null"),
        OperatorCase("eq", nil, .null, true, "null equals null"),
        OperatorCase("eq", "a", ["a"], false, "array fact, string value"),
        // ne: not eq; true when missing or mistyped.
        OperatorCase("ne", 1000, 999, true, "different numbers"),
        OperatorCase("ne", 1000, 1000, false, "equal numbers"),
        OperatorCase("ne", 1, 1.0, false, "1 equals 1.0"),
        OperatorCase("ne", 1000, nil, true, "missing"),
        OperatorCase("ne", 1000, "1000", true, "string fact, number value"),
        OperatorCase("ne", "api", "web", true, "different strings"),
        // gt, gte, lt, lte: numbers with numbers, strings with strings; anything else false.
        OperatorCase("gt", 1000, 1001, true, "greater"),
        OperatorCase("gt", 1000, 1000, false, "equal"),
        OperatorCase("gt", 1000, 1000.5, true, "double fact"),
        OperatorCase("gt", 1000, nil, false, "missing"),
        OperatorCase("gt", 1000, "2000", false, "string fact, number value"),
        OperatorCase("gt", "m", "n", true, "later string"),
        OperatorCase("gt", "10", "9", true, "strings compare lexicographically"),
        OperatorCase("gt", "b", 5, false, "number fact, string value"),
        OperatorCase("gte", 1000, 1000, true, "equal"),
        OperatorCase("gte", 1000, 999.5, false, "less"),
        OperatorCase("gte", 1000, nil, false, "missing"),
        OperatorCase("gte", "abc", "abc", true, "equal strings"),
        OperatorCase("gte", 1, true, false, "Boolean fact"),
        OperatorCase("lt", 0, -1, true, "less"),
        OperatorCase("lt", 0, 0, false, "equal"),
        OperatorCase("lt", 0, nil, false, "missing"),
        OperatorCase("lt", "\u{E9}", "z", true, "by Unicode scalars: z (U+7A) before é (U+E9)"),
        OperatorCase("lt", "b", "a", true, "earlier string"),
        OperatorCase("lt", 10, ["a"], false, "array fact"),
        OperatorCase("lte", 5, 5, true, "equal"),
        OperatorCase("lte", 5, 5.5, false, "greater"),
        OperatorCase("lte", 5, nil, false, "missing"),
        OperatorCase("lte", 5, .null, false, "null fact"),
        OperatorCase("lte", "14.0", "13.9", true, "version-like strings"),
        // in, notIn: equal to one of a list.
        OperatorCase("in", ["FR", "DE"], "FR", true, "listed string"),
        OperatorCase("in", ["FR", "DE"], "IT", false, "unlisted string"),
        OperatorCase("in", ["FR", "DE"], nil, false, "missing"),
        OperatorCase("in", ["1"], 1, false, "number fact, string list"),
        OperatorCase("in", [1, 2, 3], 2.0, true, "numbers numerically"),
        OperatorCase("in", [1, 2, 3], 4, false, "unlisted number"),
        OperatorCase("in", [nil, "x"], .null, true, "listed null"),
        OperatorCase("in", [true], true, true, "listed Boolean"),
        OperatorCase("in", [true], false, false, "unlisted Boolean"),
        OperatorCase("in", [], "x", false, "empty list"),
        OperatorCase("in", ["FR"], ["FR"], false, "array fact"),
        OperatorCase("notIn", ["FR", "DE"], "IT", true, "unlisted string"),
        OperatorCase("notIn", ["FR", "DE"], "FR", false, "listed string"),
        OperatorCase("notIn", ["FR", "DE"], nil, true, "missing"),
        OperatorCase("notIn", ["1"], 1, true, "number fact, string list"),
        // contains: element of an array fact, or substring of a string fact.
        OperatorCase("contains", "fido2", ["fido2", "sms_otp"], true, "element"),
        OperatorCase("contains", "fido2", ["totp"], false, "no such element"),
        OperatorCase("contains", "fido2", [], false, "empty array"),
        OperatorCase("contains", "fido2", nil, false, "missing"),
        OperatorCase("contains", "fido2", 5, false, "number fact"),
        OperatorCase("contains", 2, [1, 2.0], true, "number element, numerically"),
        OperatorCase("contains", nil, [1, nil], true, "null element"),
        OperatorCase("contains", true, [false, true], true, "Boolean element"),
        OperatorCase("contains", "a", [["a"]], false, "nested arrays are not searched"),
        OperatorCase("contains", "Headless", "Mozilla/5.0 HeadlessChrome/126", true, "substring"),
        OperatorCase("contains", "Headless", "Mozilla/5.0 Chrome/126", false, "no substring"),
        OperatorCase("contains", "", "anything", true, "empty substring"),
        OperatorCase("contains", "aab", "aaab", true, "substring after a partial match"),
        OperatorCase("contains", "abac", "ababac", true, "overlapping partial matches"),
        OperatorCase("contains", "abd", "abcab", false, "partial match at the end"),
        OperatorCase("contains", "\u{E9}t\u{E9}", "un \u{E9}t\u{E9} chaud", true, "non-ASCII substring"),
        OperatorCase("contains", 1, "1", false, "string fact, number value"),
        // exists: present and not null.
        OperatorCase("exists", true, "x", true, "present"),
        OperatorCase("exists", true, [], true, "present, empty array"),
        OperatorCase("exists", true, .null, false, "null"),
        OperatorCase("exists", true, nil, false, "missing"),
        OperatorCase("exists", false, nil, true, "missing, expected absent"),
        OperatorCase("exists", false, .null, true, "null, expected absent"),
        OperatorCase("exists", false, 0, false, "present, expected absent"),
        // inCidr: an IP address string in a block.
        OperatorCase("inCidr", "10.0.0.0/8", "10.1.2.3", true, "inside"),
        OperatorCase("inCidr", "10.0.0.0/8", "11.0.0.1", false, "outside"),
        OperatorCase("inCidr", "10.0.0.0/8", nil, false, "missing"),
        OperatorCase("inCidr", "10.0.0.0/8", 167_772_161, false, "number fact"),
        OperatorCase("inCidr", "10.0.0.0/8", "not-an-ip", false, "unparsable fact"),
        OperatorCase("inCidr", ["192.0.2.0/24", "2001:db8::/32"], "2001:db8::7", true, "second block of a list"),
        // withinKm: a {lat, lon} object within a distance.
        OperatorCase("withinKm", ["km": 400, "of": paris], london, true, "London within 400 km of Paris"),
        OperatorCase("withinKm", ["km": 300, "of": paris], london, false, "London not within 300 km of Paris"),
        OperatorCase("withinKm", ["km": 1, "of": paris], paris, true, "the point itself"),
        OperatorCase("withinKm", ["km": 400, "of": paris], nil, false, "missing"),
        OperatorCase("withinKm", ["km": 400, "of": paris], "48.85,2.35", false, "string fact"),
        OperatorCase("withinKm", ["km": 400, "of": paris], ["lat": 91, "lon": 0], false, "latitude out of range"),
        OperatorCase("withinKm", ["km": 400, "of": paris], ["lat": 48.8, "lon": 181], false, "longitude out of range"),
        OperatorCase("withinKm", ["km": 400, "of": paris], ["lat": "48.8", "lon": 2.3], false, "string latitude"),
        OperatorCase("withinKm", ["km": 400, "of": paris], ["lat": 48.8], false, "no longitude"),
    ]

    @Test(arguments: cases)
    func operatorOnFact(_ row: OperatorCase) throws {
        let compiled = try RulesTestSupport.single(op: row.op, value: row.value)
        #expect(RulesTestSupport.hits(compiled, RulesTestSupport.facts(x: row.fact)) == row.matches)
    }

    @Test func everyOperatorIsCovered() {
        let covered = Set(Self.cases.map(\.op))
        #expect(covered == Set(RuleOperator.allCases.map(\.rawValue)))
        // Each operator has at least one matching, one non-matching and one missing-fact row.
        for op in RuleOperator.allCases {
            let rows = Self.cases.filter { $0.op == op.rawValue }
            #expect(rows.contains { $0.matches }, "\(op) matching")
            #expect(rows.contains { !$0.matches }, "\(op) not matching")
            #expect(rows.contains { $0.fact == nil }, "\(op) missing fact")
        }
    }

    @Test(arguments: [
        ("signals.geo.lat", #"{"signals": {"geo": {"lat": 48.9}}}"#, true),
        ("signals.geo.lat", #"{"signals": {"geo": 5}}"#, false),
        ("signals.geo.lat", #"{"signals": {"geo": [1]}}"#, false),
        ("signals.geo.lat", #"{"signals": 1}"#, false),
        ("signals.geo.lat", #"[1, 2]"#, false),
        ("user.a.b.c.d.e.f.g.h", #"{"user": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 48.9}}}}}}}}}"#, true),
    ])
    func nestedPathsResolveMemberByMember(path: String, facts: String, present: Bool) throws {
        let compiled = try RulesTestSupport.single(fact: path, op: "exists", value: true)
        #expect(RulesTestSupport.hits(compiled, try RulesTestSupport.json(facts)) == present)
    }

    @Test func stringsAndListsShareInternedOperands() throws {
        // The same string in eq, in and contains of different rules: each test still works.
        let compiled = try RulesTestSupport.compile(
            #"""
            {"rules": [
              {"name": "a", "when": {"fact": "signals.country", "op": "in", "value": ["FR", "DE"]}, "action": "DENY"},
              {"name": "b", "when": {"fact": "user.registeredMethods", "op": "contains", "value": "DE"}, "action": "DENY"},
              {"name": "c", "when": {"fact": "signals.country", "op": "eq", "value": "DE"}, "action": "ALLOW"}
            ]}
            """#)
        let byCountry = compiled.evaluate(["signals": ["country": "DE"], "user": ["registeredMethods": ["fido2"]]])
        #expect(byCountry.matchedRule == "a")
        let byMethod = compiled.evaluate(["signals": ["country": "IT"], "user": ["registeredMethods": ["DE"]]])
        #expect(byMethod.matchedRule == "b")
        #expect(compiled.evaluate(["signals": ["country": "IT"]]).isDefault)
    }
}
