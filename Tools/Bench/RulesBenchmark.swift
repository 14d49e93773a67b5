import Rules
import JSON

/// `signet-bench rules [seconds]`: a 50-rule authentication ruleset (RulesWorkload) evaluated
/// on one thread. Prints `rule_evaluations_per_s` (evaluate on prepared facts: whole-ruleset
/// evaluations per second; target 1,000,000 on one core), `rule_evaluations_with_prepare_per_s`
/// (the per-request cost), `prepare_per_s` and `explain_per_s`, each measured for `seconds`
/// over 256 varied requests, most of which walk far into the list.
func rulesBenchmark(seconds: Double) throws {
    let compiled = try Ruleset(json: BenchWorkload.rulesetJSON).compile(for: .authentication, locations: BenchWorkload.locations)
    let facts = BenchWorkload.facts(count: 256)
    let prepared = facts.map { compiled.prepare($0) }

    /// Calls `body` with request indexes for `seconds`, in batches between clock reads, and returns
    /// calls per second and a checksum of the results (which keeps the work observable).
    func measure(seconds: Double, _ body: (Int) -> Int) -> (rate: Double, checksum: Int) {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .nanoseconds(Int64(seconds * 1e9))
        var calls = 0
        var checksum = 0
        while clock.now < deadline {
            for i in 0..<1024 {
                checksum &+= body((calls + i) & 255)
            }
            calls += 1024
        }
        let elapsed = (clock.now - start).components
        return (Double(calls) / (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18), checksum)
    }

    // How far evaluation walks: the position of the deciding rule (rules + 1 for the default).
    var walked = 0
    var decided: [String: Int] = [:]
    let positions = Dictionary(uniqueKeysWithValues: compiled.ruleset.rules.enumerated().map { ($1.name, $0 + 1) })
    for item in prepared {
        let decision = compiled.evaluate(item)
        decided[decision.matchedRule, default: 0] += 1
        walked += positions[decision.matchedRule] ?? compiled.ruleset.rules.count + 1
    }

    let evaluate = measure(seconds: seconds) { compiled.evaluate(prepared[$0]).matchedRule.utf8.count }
    let withPrepare = measure(seconds: seconds) { compiled.evaluate(compiled.prepare(facts[$0])).matchedRule.utf8.count }
    let prepare = measure(seconds: seconds) { compiled.prepare(facts[$0]).presentCount }
    let explain = measure(seconds: seconds) { compiled.explain(facts[$0]).rules.count }

    print("rules \(compiled.ruleset.rules.count)")
    print("fact_paths \(compiled.factPaths.count)")
    print("requests \(facts.count)")
    print("rules_tried_per_evaluation \(Double(walked) / Double(prepared.count))")
    print("rule_evaluations_per_s \(Int(evaluate.rate))")
    print("rule_evaluations_with_prepare_per_s \(Int(withPrepare.rate))")
    print("prepare_per_s \(Int(prepare.rate))")
    print("explain_per_s \(Int(explain.rate))")
    print("decisions " + decided.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    print("checksum \(evaluate.checksum &+ withPrepare.checksum &+ prepare.checksum &+ explain.checksum)")
}
