import JSON

/// The answer of a ruleset for one request: the action of the first rule that matched, or the
/// kind's default (see ``Ruleset/Kind``).
///
/// Encodes as
/// `{"action": "TRIGGER_AUTHENTICATION", "matchedRule": "big-amount", "sequences": [["fido2", "sms_otp"]], "maxTimeSeconds": 120}`,
/// with `sequences` and `maxTimeSeconds` only for `TRIGGER_AUTHENTICATION`, and `sequences`
/// (or, for a rule written in the older form, `methods`) for `SUGGEST_REGISTRATION` and
/// `ENFORCE_REGISTRATION`.
///
/// Decisions decode from the same JSON, so that a sign-in flow can keep the decision it is
/// carrying out in its stored state and read it back.
public struct RuleDecision: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The action. For `TRIGGER_AUTHENTICATION`, `maxTimeSeconds` is always set: the rule's,
    /// or ``RuleAction/defaultMaxTimeSeconds``.
    public let action: RuleAction
    /// The name of the rule that matched, or `"default"` when none did.
    public let matchedRule: String

    /// A decision.
    ///
    /// - Parameters:
    ///   - action: The action; an unset time limit becomes the default.
    ///   - matchedRule: The rule's name, or `"default"`.
    public init(action: RuleAction, matchedRule: String) {
        self.action = Self.withTimeLimit(action)
        self.matchedRule = matchedRule
    }

    /// The action with the time limit of `TRIGGER_AUTHENTICATION` made explicit, so that every
    /// consumer of a decision sees the same number and equal decisions compare equal.
    private static func withTimeLimit(_ action: RuleAction) -> RuleAction {
        if case .triggerAuthentication(let sequences, nil) = action {
            return .triggerAuthentication(sequences: sequences, maxTimeSeconds: RuleAction.defaultMaxTimeSeconds)
        }
        return action
    }

    /// The action's wire name: `ALLOW`, `TRIGGER_AUTHENTICATION`, …
    public var actionName: String { action.name }

    /// Whether no rule matched and this is the kind's default decision.
    public var isDefault: Bool { matchedRule == Ruleset.Kind.defaultRuleName }

    /// The sequences to offer for `TRIGGER_AUTHENTICATION`; empty for other actions.
    public var sequences: [[String]] {
        if case .triggerAuthentication(let sequences, _) = action { return sequences }
        return []
    }

    /// The offer of `SUGGEST_REGISTRATION` and `ENFORCE_REGISTRATION`; `nil` for other actions.
    public var registrationOffer: RegistrationOffer? {
        switch action {
        case .suggestRegistration(let offer), .enforceRegistration(let offer): offer
        default: nil
        }
    }

    /// The sequences of methods `SUGGEST_REGISTRATION` and `ENFORCE_REGISTRATION` offer to
    /// register, in order; empty for other actions.
    public var registrationSequences: [[String]] { registrationOffer?.sequences ?? [] }

    /// Every method `SUGGEST_REGISTRATION` and `ENFORCE_REGISTRATION` offer, once each, in
    /// order; empty for other actions.
    public var methods: [String] { registrationOffer?.methods ?? [] }

    /// The time allowed for `TRIGGER_AUTHENTICATION`, in seconds; `nil` for other actions.
    public var maxTimeSeconds: Int? {
        if case .triggerAuthentication(_, let seconds) = action { return seconds }
        return nil
    }

    /// The decision as JSON, the form ``encode(to:)`` writes.
    public var json: JSONValue {
        var members = action.members
        members["matchedRule"] = .string(matchedRule)
        return .object(members)
    }

    /// `ACTION (rule)`, e.g. `DENY (tor-exit-nodes)`.
    public var description: String { "\(action.name) (\(matchedRule))" }

    /// Encodes ``json``.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    // MARK: - Reading

    /// Reads a decision from its JSON, as ``json`` writes it.
    ///
    /// - Parameter json: `{"action": …, "matchedRule": …}` with the action's members.
    /// - Throws: ``RulesetError`` with the path of the first problem: the same checks as the
    ///   action of a rule, and a `matchedRule` that is a rule name or `"default"`.
    public init(json: JSONValue) throws(RulesetError) {
        let reader = try ObjectReader(
            json, at: .root, what: "a decision", allowed: Rule.members.subtracting(["name", "when"]).union(["matchedRule"]))
        let action = try Rule.readAction(reader)
        let matchedRule = try reader.requiredString("matchedRule", "the name of the rule that matched, or default")
        if matchedRule != Ruleset.Kind.defaultRuleName {
            try Rule.checkName(matchedRule, at: NodePath.root.member("matchedRule"))
        }
        self.init(action: action, matchedRule: matchedRule)
    }

    /// Reads a decision through any decoder, as ``init(json:)`` does.
    ///
    /// - Throws: A decoding error when the input is not JSON, else a ``RulesetError``.
    public init(from decoder: any Decoder) throws {
        try self.init(json: JSONValue(from: decoder))
    }
}
