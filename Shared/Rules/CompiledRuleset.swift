import JSON

/// A ruleset checked and compiled for evaluation: immutable, `Sendable`, meant to be compiled
/// once when a tenant's ruleset is stored or loaded and shared by every request.
///
/// ```swift
/// let compiled = try Ruleset(json: body).compile(for: .authentication, locations: tenant.locations)
/// let decision = compiled.evaluate(facts)        // or, preparing once:
/// let prepared = compiled.prepare(facts)
/// let decision = compiled.evaluate(prepared)     // allocation-free
/// ```
///
/// Rules are tried in order and the first that matches answers; when none does (or there are
/// none), the answer is the kind's default decision (see ``Ruleset/Kind``), whose matched rule is
/// `"default"`.
///
/// ## Cost
///
/// Compiling interns every fact path the rules use into a slot (with its prefixes), every
/// string operand into an id, and parses every operand (numbers to `Double`, CIDR blocks to
/// masks, location lists to precomputed trigonometry). ``prepare(_:)`` then resolves each path
/// once per request and parses what the tests need (string ids, IP addresses, positions);
/// ``evaluate(_:)-(PreparedFacts)`` compares pre-parsed values over flat arrays, without
/// allocating, hashing or calling trigonometric functions.
public struct CompiledRuleset: Sendable {
    /// The compiled form, shared by copies.
    let program: RuleProgram

    /// Wraps a compiled program.
    init(program: RuleProgram) {
        self.program = program
    }

    /// The compiled ruleset of a tenant without rules: every request gets `kind`'s default.
    ///
    /// - Parameter kind: The kind of ruleset.
    public init(defaultFor kind: Ruleset.Kind) {
        // An empty ruleset has nothing that can be refused.
        self.init(
            program: RuleProgram(
                kind: kind, ruleset: Ruleset(rules: []), facts: FactTable(),
                memory: ProgramMemory(ProgramMemory.Builder()), details: [], decisions: []))
    }

    /// The kind the ruleset was compiled for.
    public var kind: Ruleset.Kind { program.kind }

    /// The ruleset as written, for storage and for reading back (`GET`).
    public var ruleset: Ruleset { program.ruleset }

    /// The decision when no rule matches: the kind's default.
    public var defaultDecision: RuleDecision { program.defaultDecision }

    /// Every fact path some rule tests, in the order of first use. A service can skip computing
    /// facts no rule looks at (a geolocation lookup, say).
    public var factPaths: [FactPath] { program.facts.paths }

    /// Lays out a request's facts for this ruleset: each fact path resolved once, and what the
    /// tests need parsed.
    ///
    /// - Parameter facts: `{"signals": {...}, "context": {...}, "user": {...}, "time": {...}}`.
    ///   Anything that is not an object leaves every fact missing.
    /// - Returns: Facts to pass to ``evaluate(_:)-(PreparedFacts)`` of this ruleset.
    public func prepare(_ facts: JSONValue) -> PreparedFacts {
        PreparedFacts(program: program, slots: program.facts.prepare(facts))
    }

    /// The decision for prepared facts: the action of the first rule that matches, else the
    /// default. Allocation-free.
    ///
    /// - Parameter prepared: Facts prepared by this ruleset's ``prepare(_:)``.
    /// - Precondition: `prepared` was made by this compiled ruleset (or a copy of it).
    public func evaluate(_ prepared: PreparedFacts) -> RuleDecision {
        precondition(prepared.program === program, "facts prepared for another compiled ruleset")
        guard let rule = program.firstMatch(prepared.slots) else { return program.defaultDecision }
        return program.decisions[rule]
    }

    /// The decision for a request's facts: ``prepare(_:)`` then ``evaluate(_:)-(PreparedFacts)``.
    ///
    /// - Parameter facts: `{"signals": {...}, "context": {...}, "user": {...}, "time": {...}}`.
    public func evaluate(_ facts: JSONValue) -> RuleDecision {
        evaluate(prepare(facts))
    }
}

// MARK: - Explain

extension CompiledRuleset {
    /// Evaluates the facts rule by rule and says why each rule before the deciding one did not
    /// match: the failing condition's path, fact, operator, value and the fact's actual value.
    ///
    /// Slower than ``evaluate(_:)-(JSONValue)`` (it builds the trace and looks facts up again
    /// for their actual values) but it takes the same decision: the same compiled tests over the
    /// same prepared facts, walked in the same order.
    ///
    /// - Parameter facts: `{"signals": {...}, "context": {...}, "user": {...}, "time": {...}}`.
    /// - Returns: The decision and, for each rule tried, whether it matched and why not.
    public func explain(_ facts: JSONValue) -> RuleTrace {
        let prepared = prepare(facts).slots
        let explainer = Explainer(program: program, facts: facts, prepared: prepared)
        var entries: [RuleTrace.Entry] = []
        for (rule, root) in program.roots.enumerated() {
            let name = program.decisions[rule].matchedRule
            if let root, let failure = explainer.failure(of: root) {
                entries.append(RuleTrace.Entry(rule: name, matched: false, because: failure))
                continue
            }
            entries.append(RuleTrace.Entry(rule: name, matched: true, because: nil))
            return RuleTrace(decision: program.decisions[rule], rules: entries)
        }
        return RuleTrace(decision: program.defaultDecision, rules: entries)
    }
}

/// Walks a program's condition nodes for one request, building the failure of a condition that
/// does not match.
private struct Explainer {
    /// The program explained.
    let program: RuleProgram
    /// The request's facts as given, for actual values.
    let facts: JSONValue
    /// The same facts prepared, for the tests.
    let prepared: [PreparedFact]

    /// Why the condition at `index` does not match, or `nil` when it matches.
    func failure(of index: Int) -> RuleTrace.Failure? {
        let node = program.node(index)
        let detail = program.details[index]
        switch node.kind {
        case .test:
            // The very test evaluation runs, so explain cannot disagree with it.
            let matched = prepared.withUnsafeBufferPointer { prepared in
                node.test.matches(prepared.baseAddress! + Int(node.slot), program.memory.tables)
            }
            guard matched == node.negated, let predicate = detail.predicate else { return nil }
            let actual = predicate.fact.resolve(in: facts)
            return RuleTrace.Failure(
                path: detail.path, op: predicate.op.rawValue, fact: predicate.fact.description,
                value: predicate.value, actual: actual, missing: actual == nil)
        case .all:
            for child in program.children(of: index) {
                if let failure = failure(of: child) { return failure }
            }
            return nil
        case .any:
            var alternatives: [RuleTrace.Failure] = []
            for child in program.children(of: index) {
                guard let failure = failure(of: child) else { return nil }
                alternatives.append(failure)
            }
            return RuleTrace.Failure(path: detail.path, alternatives: alternatives)
        case .not:
            guard failure(of: index + 1) == nil else { return nil }
            let negated = program.details[index + 1].predicate
            let actual = negated?.fact.resolve(in: facts)
            return RuleTrace.Failure(
                path: detail.path, op: "not", fact: negated?.fact.description, value: nil, actual: actual,
                missing: negated != nil && actual == nil)
        }
    }
}
