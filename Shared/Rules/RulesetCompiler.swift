import JSON

/// Checks a ``Ruleset`` for a kind and a tenant's location lists, and builds its
/// ``RuleProgram``: fact paths interned into slots, string operands into ids, operands parsed,
/// conditions flattened into nodes, decisions made ready to return.
///
/// The model may have been built in code, so every check the reader makes is made again here,
/// in the same order and with the same paths, plus the two that need context: actions allowed
/// for the kind, and location list names.
struct RulesetCompiler {
    private let locations: [String: [GeoPoint]]
    private var facts = FactTable()
    private var memory = ProgramMemory.Builder()
    private var details: [RuleProgram.Detail] = []
    private var count = 0

    private init(locations: [String: [GeoPoint]]) {
        self.locations = locations
    }

    /// Compiles `ruleset` for `kind`.
    ///
    /// - Parameters:
    ///   - ruleset: The ruleset.
    ///   - kind: Which actions are allowed and which default applies.
    ///   - locations: The tenant's named location lists.
    /// - Throws: ``RulesetError`` with the path of the first problem.
    static func compile(_ ruleset: Ruleset, kind: Ruleset.Kind, locations: [String: [GeoPoint]]) throws(RulesetError)
        -> RuleProgram
    {
        var compiler = RulesetCompiler(locations: locations)
        let rulesPath = NodePath.root.member("rules")
        guard ruleset.rules.count <= Ruleset.Limits.rules else {
            throw RulesetError(.limitExceeded, at: rulesPath, "a ruleset has at most \(Ruleset.Limits.rules) rules")
        }
        var names = Set<String>()
        var decisions: [RuleDecision] = []
        for (i, rule) in ruleset.rules.enumerated() {
            let path = rulesPath.index(i)
            try Rule.checkName(rule.name, at: path.member("name"))
            guard kind.allows(rule.action) else {
                throw RulesetError(
                    .actionNotAllowed, at: path.member("action"),
                    "\(rule.action.name) is not an action of \(kind.rawValue) rulesets; expected one of \(kind.actionNames)")
            }
            try rule.action.check(at: path)
            if let when = rule.when {
                let root = try compiler.emit(when, at: path.member("when"), relative: .when, depth: 1)
                compiler.memory.roots.append(Int32(root))
            } else {
                compiler.memory.roots.append(-1)
            }
            guard names.insert(rule.name).inserted else {
                throw RulesetError(
                    .duplicateRuleName, at: path.member("name"),
                    "another rule is already named \(RulesetError.quote(rule.name))")
            }
            decisions.append(RuleDecision(action: rule.action, matchedRule: rule.name))
        }
        return RuleProgram(
            kind: kind, ruleset: ruleset, facts: compiler.facts,
            memory: ProgramMemory(compiler.memory), details: compiler.details, decisions: decisions)
    }

    /// Appends the nodes of `condition` in pre-order and returns the index of its root.
    ///
    /// - Parameters:
    ///   - condition: The condition.
    ///   - path: Its path in the document, for errors.
    ///   - relative: Its path in its rule, for explain.
    ///   - depth: Its level: 1 for a rule's `when`.
    private mutating func emit(_ condition: Condition, at path: NodePath, relative: NodePath, depth: Int)
        throws(RulesetError) -> Int
    {
        try Condition.checkLimits(at: path, depth: depth, count: &count)
        let index = memory.nodes.count
        // Reserve the slot: the node's `end` is known once its subtree is emitted.
        memory.nodes.append(RuleProgram.Node(.all, end: index + 1))
        switch condition {
        case .all(let conditions), .any(let conditions):
            let isAll = if case .all = condition { true } else { false }
            let member = isAll ? "all" : "any"
            details.append(RuleProgram.Detail(path: relative.description, predicate: nil))
            for (i, child) in conditions.enumerated() {
                _ = try emit(
                    child, at: path.member(member).index(i), relative: relative.member(member).index(i),
                    depth: depth + 1)
            }
            memory.nodes[index] = RuleProgram.Node(isAll ? .all : .any, end: memory.nodes.count)
        case .not(let child):
            details.append(RuleProgram.Detail(path: relative.description, predicate: nil))
            _ = try emit(child, at: path.member("not"), relative: relative.member("not"), depth: depth + 1)
            memory.nodes[index] = RuleProgram.Node(.not, end: memory.nodes.count)
        case .predicate(let predicate):
            details.append(RuleProgram.Detail(path: relative.description, predicate: predicate))
            let operand = try Operand.compile(
                predicate.op, predicate.value, at: path.member("value"), locations: locations)
            let slot = facts.slot(for: predicate.fact)
            facts.note(operand, slot: slot)
            let negated = predicate.op == .ne || predicate.op == .notIn
            memory.nodes[index] = RuleProgram.Node(test: test(for: operand), negated: negated, slot: slot, end: index + 1)
        }
        return index
    }

    /// The compiled test of an operand, interning its strings and laying out its lists.
    private mutating func test(for operand: Operand) -> FactTest {
        typealias Builder = ProgramMemory.Builder
        switch operand {
        case .equals(.null): return .equalsNull
        case .equals(.bool(let flag)): return .equalsBool(flag)
        case .equals(.number(let number)): return .equalsNumber(number)
        case .equals(.string(let text)): return .equalsString(facts.intern(text))
        case .contains(.null): return .containsNull
        case .contains(.bool(let flag)): return .containsBool(flag)
        case .contains(.number(let number)): return .containsNumber(number)
        case .contains(.string(let text)): return .containsString(facts.intern(text), memory.appendPattern(text))
        case .orderedNumber(let order, let bound): return .orderNumber(order, bound)
        case .orderedString(let order, let bound): return .orderString(order, Builder.append(bound.utf8, to: &memory.bytes))
        case .list(let scalars):
            var ids: [Int32] = []
            var numbers: [Double] = []
            var flags: FactTest.ScalarFlags = []
            for scalar in scalars {
                switch scalar {
                case .null: flags.insert(.null)
                case .bool(let flag): flags.insert(flag ? .true : .false)
                case .number(let number): numbers.append(number)
                case .string(let text): ids.append(facts.intern(text))
                }
            }
            return .member(
                ids: Builder.append(Set(ids).sorted(), to: &memory.ids),
                numbers: Builder.append(Set(numbers).sorted(), to: &memory.numbers), flags)
        case .flag(let flag): return .exists(flag)
        case .blocks(let blocks): return .inCidr(Builder.append(blocks.map(\.masked), to: &memory.blocks))
        case .near(let km, let points):
            return .withinKm(
                Builder.append(points.map(GeoTrig.init), to: &memory.points),
                maximumHaversine: GeoTrig.maximumHaversine(km: km))
        }
    }
}
