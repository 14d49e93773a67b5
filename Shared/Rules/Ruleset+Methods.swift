/// The checks of a ruleset against the methods of the service that runs it, made when the
/// ruleset is saved (``Ruleset/compile(for:locations:)`` checks only the method names' form:
/// the Rules module does not know which methods exist).
extension Ruleset {
    /// What the service that evaluates a ruleset offers.
    public struct MethodCatalog: Sendable, Hashable {
        /// Method names a sequence (authentication) or a `methods` list (registration) may name.
        public var known: Set<String>
        /// Methods whose step signs what it confirms (the dynamic-linking challenge of a
        /// transaction's details): `fido2`. A sequence for a transaction needs one of them.
        public var signing: Set<String>
        /// The facts a sign-in for a transaction has and others do not (`context.transactionId`,
        /// `context.transactionAmount`…): a rule that tests one of them, other than under
        /// `not` or by `exists: false`, applies to transactions.
        public var transactionFacts: Set<String>

        /// A catalog.
        public init(known: Set<String>, signing: Set<String>, transactionFacts: Set<String>) {
            self.known = known
            self.signing = signing
            self.transactionFacts = transactionFacts
        }
    }

    /// Checks every method named by the rules against `catalog`.
    ///
    /// - Authentication: every method of every sequence is one the service has
    ///   (`unknown_method`); a `TRIGGER_AUTHENTICATION` rule whose condition tests a transaction
    ///   fact (not under `not`, nor `exists: false`) offers only sequences with a signing step
    ///   (`sequence_cannot_confirm`). A rule that does not mention transactions may still match
    ///   one: the sign-in then drops its sequences that cannot confirm.
    /// - Registration: every method of every offered sequence (or of the older `methods`) is one
    ///   a user can register (`unknown_method`).
    ///
    /// - Throws: ``RulesetError`` with the path of the first method refused.
    public func checkMethods(_ catalog: MethodCatalog, for kind: Kind) throws(RulesetError) {
        let rulesPath = NodePath.root.member("rules")
        for (i, rule) in rules.enumerated() {
            let path = rulesPath.index(i)
            switch rule.action {
            case .triggerAuthentication(let sequences, _):
                for (j, sequence) in sequences.enumerated() {
                    for (k, method) in sequence.enumerated() where !catalog.known.contains(method) {
                        throw RulesetError(
                            .unknownMethod, at: path.member("sequences").index(j).index(k),
                            "\(RulesetError.quote(method)) is not a method of this service: \(catalog.known.sorted().joined(separator: ", "))")
                    }
                }
                guard kind == .authentication, let when = rule.when, when.testsPositively(catalog.transactionFacts) else { continue }
                for (j, sequence) in sequences.enumerated() where catalog.signing.isDisjoint(with: sequence) {
                    throw RulesetError(
                        .sequenceCannotConfirm, at: path.member("sequences").index(j),
                        "this rule applies to transactions, and a transaction is confirmed only by a step that signs its details: "
                            + "each sequence needs one of \(catalog.signing.sorted().joined(separator: ", "))")
                }
            case .suggestRegistration(let offer), .enforceRegistration(let offer):
                for (j, sequence) in offer.sequences.enumerated() {
                    for (k, method) in sequence.enumerated() where !catalog.known.contains(method) {
                        // The older form's `methods[j]` is the sequence `j` of one method.
                        let at = offer.writtenAsMethods ? path.member("methods").index(j) : path.member("sequences").index(j).index(k)
                        throw RulesetError(
                            .unknownMethod, at: at,
                            "\(RulesetError.quote(method)) is not a method users can register: \(catalog.known.sorted().joined(separator: ", "))")
                    }
                }
            case .allow, .deny, .ignoreRegistration:
                continue
            }
        }
    }
}

extension Condition {
    /// Whether the condition tests one of `facts` other than under a `not` or by `exists: false` (a rule about those
    /// facts being present, not absent).
    func testsPositively(_ facts: Set<String>) -> Bool {
        switch self {
        case .all(let conditions), .any(let conditions): conditions.contains { $0.testsPositively(facts) }
        case .not: false
        case .predicate(let predicate):
            // `exists: false` tests that the fact is absent.
            facts.contains(predicate.fact.description) && !(predicate.op == .exists && predicate.value == .bool(false))
        }
    }
}
