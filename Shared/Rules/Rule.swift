import JSON

/// One rule of a ruleset: a name, an optional condition and the action it answers.
///
/// On the wire:
///
/// ```json
/// {"name": "big-amount",
///  "when": {"fact": "context.transactionAmount", "op": "gt", "value": 1000},
///  "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "sms_otp"]], "maxTimeSeconds": 120}
/// ```
///
/// A rule without `when` always matches (a catch-all, typically last). Names are 1–64
/// characters of `[A-Za-z0-9 _.-]`, unique within the ruleset, and not `default` (the name of
/// the kind's default decision).
public struct Rule: Sendable, Hashable {
    /// The rule's name, reported as ``RuleDecision/matchedRule``.
    public var name: String
    /// When the rule applies; `nil` for always.
    public var when: Condition?
    /// What it answers.
    public var action: RuleAction

    /// A rule; checked by ``Ruleset/compile(for:locations:)``.
    ///
    /// - Parameters:
    ///   - name: 1–64 characters of `[A-Za-z0-9 _.-]`, not `default`.
    ///   - when: When it applies; `nil` for always.
    ///   - action: What it answers.
    public init(name: String, when: Condition? = nil, action: RuleAction) {
        self.name = name
        self.when = when
        self.action = action
    }

    /// The rule as its wire JSON.
    public var json: JSONValue {
        var members = action.members
        members["name"] = .string(name)
        if let when { members["when"] = when.json }
        return .object(members)
    }

    /// The members a rule object may have.
    static let members: Set<String> = ["name", "when", "action", "sequences", "methods", "maxTimeSeconds"]

    // MARK: - Parsing

    /// Reads a rule: unknown members first, then `name`, `action` with its members, `when`.
    ///
    /// - Parameters:
    ///   - json: The rule object.
    ///   - path: Its path, `rules[i]`.
    ///   - count: Condition nodes read so far in the ruleset; incremented.
    /// - Throws: A ``RulesetError`` naming the first problem found.
    init(json: JSONValue, at path: NodePath, count: inout Int) throws(RulesetError) {
        let reader = try ObjectReader(json, at: path, what: "a rule", allowed: Self.members)
        name = try reader.requiredString("name", "1-64 characters of A-Z a-z 0-9 space _ . -")
        try Self.checkName(name, at: path.member("name"))
        action = try Self.readAction(reader)
        if let condition = reader.members["when"] {
            when = try Condition.parse(condition, at: path.member("when"), depth: 1, count: &count)
        } else {
            when = nil
        }
    }

    /// Refuses a name that is not 1–64 characters of `[A-Za-z0-9 _.-]`, or is `default`.
    ///
    /// - Throws: `invalid_rule_name` at `path`.
    static func checkName(_ name: String, at path: NodePath) throws(RulesetError) {
        guard isNameSyntax(name) else {
            throw RulesetError(
                .invalidRuleName, at: path,
                "\(RulesetError.quote(name)) is not a rule name: 1-64 characters of A-Z a-z 0-9 space _ . -")
        }
        guard name != Ruleset.Kind.defaultRuleName else {
            throw RulesetError(
                .invalidRuleName, at: path, "\"default\" is reserved for the decision taken when no rule matches")
        }
    }

    /// Whether `name` is 1–64 characters of `[A-Za-z0-9 _.-]`.
    private static func isNameSyntax(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        return bytes.allSatisfy { byte in
            byte.isASCIILetter || byte.isASCIIDigit || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    /// Reads `action` and the members that go with it from a rule object (or a decision).
    ///
    /// - Throws: `missing_member`, `invalid_type`, `unknown_action`, `unknown_member` (a member
    ///   of another action), `invalid_value` or `invalid_method_name`.
    static func readAction(_ reader: ObjectReader) throws(RulesetError) -> RuleAction {
        let name = try reader.requiredString("action", "one of \(RuleAction.names)")
        let path = reader.path
        let action: RuleAction
        switch name {
        case "ALLOW", "DENY", "IGNORE_REGISTRATION":
            for member in ["sequences", "maxTimeSeconds", "methods"] {
                try reader.refuse(member, because: "\(name) takes no \(member)")
            }
            action = name == "ALLOW" ? .allow : name == "DENY" ? .deny : .ignoreRegistration
        case "TRIGGER_AUTHENTICATION":
            try reader.refuse("methods", because: "TRIGGER_AUTHENTICATION takes sequences")
            let sequences = try readSequences(reader)
            var maxTimeSeconds: Int?
            if let value = reader.members["maxTimeSeconds"] {
                guard let seconds = value.intValue else {
                    throw RulesetError(
                        .invalidType, at: path.member("maxTimeSeconds"), "maxTimeSeconds must be an integer")
                }
                maxTimeSeconds = Int(clamping: seconds)
            }
            action = .triggerAuthentication(sequences: sequences, maxTimeSeconds: maxTimeSeconds)
        case "SUGGEST_REGISTRATION", "ENFORCE_REGISTRATION":
            try reader.refuse("maxTimeSeconds", because: "\(name) takes sequences")
            // Sequences of methods to register, as authentication rules answer; the older
            // `methods` (any one of them) still reads, for rulesets stored before.
            let offer: RegistrationOffer
            if reader.members["methods"] != nil {
                try reader.refuse("sequences", because: "give sequences or the older methods, not both")
                let elements = try reader.requiredArray("methods", "a non-empty list of methods")
                offer = RegistrationOffer(methods: try methodNames(elements, at: path.member("methods")))
            } else {
                offer = RegistrationOffer(sequences: try readSequences(reader))
            }
            action = name == "SUGGEST_REGISTRATION" ? .suggestRegistration(offer) : .enforceRegistration(offer)
        default:
            throw RulesetError(
                .unknownAction, at: path.member("action"),
                "\(RulesetError.quote(name)) is not an action; expected one of \(RuleAction.names)")
        }
        try action.check(at: path)
        return action
    }

    /// Reads `sequences`: a list of lists of method names.
    private static func readSequences(_ reader: ObjectReader) throws(RulesetError) -> [[String]] {
        let path = reader.path.member("sequences")
        let elements = try reader.requiredArray("sequences", "a non-empty list of non-empty lists of methods")
        var sequences: [[String]] = []
        for (i, element) in elements.enumerated() {
            guard case .array(let methods) = element else {
                throw RulesetError(.invalidType, at: path.index(i), "a sequence must be an array of methods")
            }
            sequences.append(try methodNames(methods, at: path.index(i)))
        }
        return sequences
    }

    private static func methodNames(_ elements: [JSONValue], at path: NodePath) throws(RulesetError) -> [String] {
        var methods: [String] = []
        methods.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            guard case .string(let method) = element else {
                throw RulesetError(.invalidType, at: path.index(i), "a method must be a string such as \"fido2\"")
            }
            methods.append(method)
        }
        return methods
    }
}
