import FuzzSupport
import JSON
import Rules

/// Rulesets as an administrator sends them (`PUT …/rulesets/{kind}`, the explain dry-run) and
/// the facts they are evaluated against: the strict parse, `Ruleset(json:)`, `compile(for:)`,
/// then `evaluate` and `explain` on the facts.
///
/// Input: a first byte choosing the ruleset kind, then the ruleset's JSON text, then (after a
/// 0xFF byte, which no UTF-8 JSON text holds) the facts' JSON text.
///
/// Properties: refusals are `RulesetError`s (typed throws); a ruleset read from JSON and written
/// back reads as itself; `explain` reaches the decision `evaluate` gives, on the same facts
/// prepared once or given raw.
@main
enum RulesFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let selector = bytes.first else { return 0 }
        let kinds = Ruleset.Kind.allCases
        let kind = kinds[Int(selector) % kinds.count]
        let rest = bytes.dropFirst()
        let split = rest.firstIndex(of: 0xFF)
        let rulesetText = Array(rest[..<(split ?? rest.endIndex)])
        let factsText = split.map { Array(rest[rest.index(after: $0)...]) } ?? Array("{}".utf8)
        guard let json = try? JSONParser.parse(rulesetText, maximumDepth: 64) else { return 0 }
        let ruleset: Ruleset
        do throws(RulesetError) {
            ruleset = try Ruleset(json: json)
        } catch {
            if error.code.rawValue.isEmpty { Fuzz.fail("a RulesetError without a code") }
            return 0
        }
        do throws(RulesetError) {
            if try Ruleset(json: ruleset.json) != ruleset { Fuzz.fail("a ruleset changed through its JSON") }
        } catch {
            Fuzz.fail("a ruleset's own JSON is refused: \(error.code)")
        }
        let compiled: CompiledRuleset
        do throws(RulesetError) {
            compiled = try ruleset.compile(for: kind)
        } catch {
            return 0
        }
        guard let facts = try? JSONParser.parse(factsText, maximumDepth: 64) else { return 0 }
        let decision = compiled.evaluate(facts)
        if compiled.evaluate(compiled.prepare(facts)) != decision { Fuzz.fail("prepared facts decide otherwise") }
        if compiled.explain(facts).decision != decision { Fuzz.fail("explain reaches another decision than evaluate") }
        return 0
    }
}
