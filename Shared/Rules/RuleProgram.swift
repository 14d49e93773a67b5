import JSON

/// A compiled ruleset: conditions flattened into one table of nodes in pre-order, each node
/// knowing where its subtree ends, so that evaluation walks plain memory without following
/// references, counting references or allocating.
///
/// Immutable once built (every stored property is a `let` of a `Sendable` type), hence
/// `Sendable` and shared by every task that evaluates the ruleset.
final class RuleProgram: Sendable {
    /// One condition, flattened.
    struct Node: Sendable, BitwiseCopyable {
        /// What the node is.
        enum Kind: UInt8, Sendable, BitwiseCopyable {
            /// `all`: the children follow.
            case all
            /// `any`: the children follow.
            case any
            /// `not`: the one child follows.
            case not
            /// A fact test.
            case test
        }

        /// What the node is.
        let kind: Kind
        /// For tests: whether the result is inverted (`ne`, `notIn`).
        let negated: Bool
        /// For tests: the slot of the fact.
        let slot: Int32
        /// One past the last node of this node's subtree; the next sibling starts there.
        let end: Int32
        /// The compiled predicate (`exists(true)`, unused, for combinators).
        let test: FactTest

        /// A combinator node.
        init(_ kind: Kind, end: Int) {
            self.kind = kind
            self.negated = false
            self.slot = 0
            self.end = Int32(end)
            self.test = .exists(true)
        }

        /// A test node.
        init(test: FactTest, negated: Bool, slot: Int, end: Int) {
            self.kind = .test
            self.negated = negated
            self.slot = Int32(slot)
            self.end = Int32(end)
            self.test = test
        }
    }

    /// What explain reports about a node, beside its result.
    struct Detail: Sendable {
        /// The path relative to the rule, e.g. `when.all[0]`.
        let path: String
        /// The predicate as written, for tests.
        let predicate: FactPredicate?
    }

    /// The kind the ruleset was compiled for.
    let kind: Ruleset.Kind
    /// The ruleset as written.
    let ruleset: Ruleset
    /// The interned fact paths and string operands.
    let facts: FactTable
    /// The nodes, rule roots and operand tables.
    let memory: ProgramMemory
    /// Explain's view of each node, index for index with the nodes.
    let details: [Detail]
    /// Each rule's decision, ready to return.
    let decisions: [RuleDecision]
    /// The decision when no rule matches.
    let defaultDecision: RuleDecision

    /// A program; the default decision is the kind's.
    init(
        kind: Ruleset.Kind, ruleset: Ruleset, facts: FactTable, memory: ProgramMemory,
        details: [Detail], decisions: [RuleDecision]
    ) {
        self.kind = kind
        self.ruleset = ruleset
        self.facts = facts
        self.memory = memory
        self.details = details
        self.decisions = decisions
        self.defaultDecision = kind.defaultDecision
    }

    // MARK: - Evaluation

    /// The index of the first rule that matches, or `nil`.
    ///
    /// - Parameter facts: Facts prepared by this program's fact table.
    func firstMatch(_ facts: [PreparedFact]) -> Int? {
        let tables = memory.tables
        return facts.withUnsafeBufferPointer { facts in
            for (rule, root) in tables.roots.enumerated() {
                if root < 0 || Self.matches(Int(root), tables, facts) { return rule }
            }
            return nil
        }
    }

    /// Whether the condition at `index` matches.
    static func matches(_ index: Int, _ tables: ProgramMemory.Tables, _ facts: UnsafeBufferPointer<PreparedFact>)
        -> Bool
    {
        let node = tables.nodes[index]
        switch node.kind {
        case .test:
            return node.test.matches(facts.baseAddress! + Int(node.slot), tables) != node.negated
        case .all:
            var child = index + 1
            while child < node.end {
                if !matches(child, tables, facts) { return false }
                child = Int(tables.nodes[child].end)
            }
            return true
        case .any:
            var child = index + 1
            while child < node.end {
                if matches(child, tables, facts) { return true }
                child = Int(tables.nodes[child].end)
            }
            return false
        case .not:
            return !matches(index + 1, tables, facts)
        }
    }

    /// The children of the combinator at `index`, in order.
    func children(of index: Int) -> [Int] {
        let nodes = memory.tables.nodes
        var children: [Int] = []
        var child = index + 1
        while child < nodes[index].end {
            children.append(child)
            child = Int(nodes[child].end)
        }
        return children
    }

    /// The root node of each rule's condition, `nil` for a rule without one.
    var roots: [Int?] {
        memory.tables.roots.map { $0 < 0 ? nil : Int($0) }
    }

    /// The node at `index`.
    func node(_ index: Int) -> Node { memory.tables.nodes[index] }
}
