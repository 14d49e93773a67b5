import JSON

/// A tenant's ruleset as written: an ordered list of rules, the first match winning.
///
/// The wire format, fixed by the API contract:
///
/// ```json
/// {"rules": [
///   {"name": "tor", "when": {"fact": "signals.ip", "op": "inCidr", "value": ["185.220.100.0/22"]},
///    "action": "DENY"},
///   {"name": "big-amount",
///    "when": {"all": [{"fact": "context.transactionAmount", "op": "gt", "value": 1000},
///                     {"not": {"fact": "signals.geo", "op": "withinKm", "value": {"km": 50, "of": "offices"}}}]},
///    "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"]], "maxTimeSeconds": 120}
/// ]}
/// ```
///
/// Read one with ``init(json:)`` from the `JSONValue` of a request body (or through
/// `Decodable`), store and return ``json`` (or encode it), and ``compile(for:locations:)`` it
/// to evaluate requests. Reading refuses everything that does not depend on the tenant (unknown
/// members anywhere, bad names, operands, CIDR blocks, limits); compiling checks the model again
/// (it may have been built in code) and adds what does: the actions allowed for the ruleset's
/// kind and the tenant's location lists.
public struct Ruleset: Sendable, Hashable, Codable {
    /// The limits on one ruleset.
    public enum Limits {
        /// The most rules: 200.
        public static let rules = 200
        /// The deepest nesting of conditions, a rule's `when` being level 1: 16.
        public static let conditionDepth = 16
        /// The most conditions (combinators and predicates) in all rules together: 1000.
        public static let conditionNodes = 1000
        /// The most entries in an `in`, `notIn` or `inCidr` list: 1000.
        public static let listEntries = 1000
        /// The most characters (Unicode scalars) in a string operand: 1024.
        public static let stringLength = 1024
    }

    /// The two kinds of ruleset a tenant has, which differ in the actions their rules may
    /// answer and in the decision when no rule matches.
    ///
    /// ## Defaults
    ///
    /// A tenant without rules, and any request that no rule matches, gets the kind's
    /// ``defaultDecision``, whose ``RuleDecision/matchedRule`` is `"default"` (a name rules may
    /// not take):
    ///
    /// - **authentication**: `TRIGGER_AUTHENTICATION` with sequences `[["fido2"]]` and
    ///   `maxTimeSeconds` 300: sign in with a FIDO2 authenticator, in five minutes.
    /// - **registration**: `IGNORE_REGISTRATION`: say nothing about registering.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Adaptive authentication: `ALLOW`, `DENY`, `TRIGGER_AUTHENTICATION`.
        case authentication
        /// Registration decisions: `SUGGEST_REGISTRATION`, `ENFORCE_REGISTRATION`, `DENY`,
        /// `IGNORE_REGISTRATION`.
        case registration

        /// The name a decision carries when no rule matched: `"default"`.
        public static let defaultRuleName = "default"

        /// What a request gets when no rule matches (or there are none).
        ///
        /// - authentication: `TRIGGER_AUTHENTICATION`, sequences `[["fido2"]]`, maxTimeSeconds 300.
        /// - registration: `IGNORE_REGISTRATION`.
        public var defaultDecision: RuleDecision {
            switch self {
            case .authentication:
                RuleDecision(
                    action: .triggerAuthentication(sequences: [["fido2"]], maxTimeSeconds: RuleAction.defaultMaxTimeSeconds),
                    matchedRule: Self.defaultRuleName)
            case .registration:
                RuleDecision(action: .ignoreRegistration, matchedRule: Self.defaultRuleName)
            }
        }

        /// Whether rules of this kind may answer `action`.
        ///
        /// - Parameter action: The action.
        public func allows(_ action: RuleAction) -> Bool {
            switch (self, action) {
            case (.authentication, .allow), (.authentication, .deny), (.authentication, .triggerAuthentication): true
            case (.registration, .suggestRegistration), (.registration, .enforceRegistration),
                (.registration, .deny), (.registration, .ignoreRegistration):
                true
            default: false
            }
        }

        /// The action names this kind allows, for messages.
        var actionNames: String {
            switch self {
            case .authentication: "ALLOW, DENY, TRIGGER_AUTHENTICATION"
            case .registration: "SUGGEST_REGISTRATION, ENFORCE_REGISTRATION, DENY, IGNORE_REGISTRATION"
            }
        }
    }

    /// The rules, in the order they are tried.
    public var rules: [Rule]

    /// A ruleset; checked by ``compile(for:locations:)``.
    ///
    /// - Parameter rules: The rules, in the order they are tried.
    public init(rules: [Rule]) {
        self.rules = rules
    }

    /// Reads a ruleset from its wire JSON.
    ///
    /// - Parameter json: `{"rules": [...]}`.
    /// - Throws: ``RulesetError`` with the path of the first problem: a wrong type, an unknown or
    ///   missing member, a bad rule name or method name, a duplicate rule name, an unknown action
    ///   or operator, a bad fact path, an operand that does not suit its operator, a bad CIDR
    ///   block, or a limit exceeded.
    public init(json: JSONValue) throws(RulesetError) {
        let reader = try ObjectReader(json, at: .root, what: "a ruleset", allowed: ["rules"])
        let elements = try reader.requiredArray("rules", "an array of rules")
        let rulesPath = NodePath.root.member("rules")
        guard elements.count <= Limits.rules else {
            throw RulesetError(.limitExceeded, at: rulesPath, "a ruleset has at most \(Limits.rules) rules")
        }
        var rules: [Rule] = []
        rules.reserveCapacity(elements.count)
        var names = Set<String>()
        var count = 0
        for (i, element) in elements.enumerated() {
            let rule = try Rule(json: element, at: rulesPath.index(i), count: &count)
            guard names.insert(rule.name).inserted else {
                throw RulesetError(
                    .duplicateRuleName, at: rulesPath.index(i).member("name"),
                    "another rule is already named \(RulesetError.quote(rule.name))")
            }
            rules.append(rule)
        }
        self.rules = rules
    }

    /// The ruleset as its wire JSON: what ``init(json:)`` reads back to an equal ruleset.
    public var json: JSONValue {
        ["rules": .array(rules.map(\.json))]
    }

    /// Checks the ruleset for a kind of use and a tenant's location lists, and compiles it for
    /// evaluation.
    ///
    /// - Parameters:
    ///   - kind: Authentication or registration decisions: which actions rules may answer and
    ///     which default applies.
    ///   - locations: The tenant's named location lists, for `withinKm` operands that name one.
    /// - Returns: An immutable ruleset to evaluate, shareable between tasks.
    /// - Throws: ``RulesetError``: anything ``init(json:)`` refuses, plus `action_not_allowed`
    ///   for an action of the other kind and `unknown_location_list`.
    public func compile(for kind: Ruleset.Kind, locations: [String: [GeoPoint]] = [:]) throws(RulesetError)
        -> CompiledRuleset
    {
        CompiledRuleset(program: try RulesetCompiler.compile(self, kind: kind, locations: locations))
    }

    // MARK: - Codable

    /// Reads a ruleset through any decoder, as ``init(json:)`` does.
    ///
    /// - Throws: A decoding error when the input is not JSON, else a ``RulesetError``.
    public init(from decoder: any Decoder) throws {
        try self.init(json: JSONValue(from: decoder))
    }

    /// Encodes ``json``.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}
