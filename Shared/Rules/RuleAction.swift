import JSON

/// What a rule answers when it matches.
///
/// Authentication rulesets answer ``allow``, ``deny`` or ``triggerAuthentication(sequences:maxTimeSeconds:)``;
/// registration decision rulesets answer ``suggestRegistration(_:)``,
/// ``enforceRegistration(_:)`` (each with a ``RegistrationOffer`` of method sequences), ``deny``
/// or ``ignoreRegistration`` (see ``Ruleset/Kind``).
///
/// Method names match `^[a-z][a-z0-9_]{0,31}$` (`fido2`, `sms_otp`, `email_otp`, `totp`,
/// `external_jwt`, `password`, `photo_id`, `uaf`…); any such name is accepted, and the service
/// decides which methods a tenant has.
public enum RuleAction: Sendable, Hashable {
    /// `ALLOW`: let the user in without further authentication.
    case allow
    /// `DENY`: refuse.
    case deny
    /// `TRIGGER_AUTHENTICATION`: ask for one of `sequences` (each a list of methods done in
    /// order: `[["fido2"], ["fido2", "sms_otp"]]`) within `maxTimeSeconds` (1–3600; `nil` on the
    /// wire means ``defaultMaxTimeSeconds``).
    case triggerAuthentication(sequences: [[String]], maxTimeSeconds: Int?)
    /// `SUGGEST_REGISTRATION`: offer to register one of the offer's sequences; the user may
    /// decline.
    case suggestRegistration(RegistrationOffer)
    /// `ENFORCE_REGISTRATION`: require registering one of the offer's sequences.
    case enforceRegistration(RegistrationOffer)
    /// `IGNORE_REGISTRATION`: say nothing about registration.
    case ignoreRegistration

    /// `SUGGEST_REGISTRATION` in the older form: any one of `methods`.
    public static func suggestRegistration(methods: [String]) -> RuleAction { .suggestRegistration(RegistrationOffer(methods: methods)) }
    /// `SUGGEST_REGISTRATION` of `sequences`, in order.
    public static func suggestRegistration(sequences: [[String]]) -> RuleAction { .suggestRegistration(RegistrationOffer(sequences: sequences)) }
    /// `ENFORCE_REGISTRATION` in the older form: any one of `methods`.
    public static func enforceRegistration(methods: [String]) -> RuleAction { .enforceRegistration(RegistrationOffer(methods: methods)) }
    /// `ENFORCE_REGISTRATION` of `sequences`, in order.
    public static func enforceRegistration(sequences: [[String]]) -> RuleAction { .enforceRegistration(RegistrationOffer(sequences: sequences)) }

    /// The time allowed for a triggered authentication when a rule does not say: 300 seconds.
    public static let defaultMaxTimeSeconds = 300
    /// The most time a rule may allow for a triggered authentication: 3600 seconds.
    public static let maximumMaxTimeSeconds = 3600
    /// The most alternative sequences of one action.
    public static let maximumSequences = 32
    /// The most methods in one sequence or one `methods` list.
    public static let maximumMethods = 16

    /// The action's name on the wire: `ALLOW`, `TRIGGER_AUTHENTICATION`, …
    public var name: String {
        switch self {
        case .allow: "ALLOW"
        case .deny: "DENY"
        case .triggerAuthentication: "TRIGGER_AUTHENTICATION"
        case .suggestRegistration: "SUGGEST_REGISTRATION"
        case .enforceRegistration: "ENFORCE_REGISTRATION"
        case .ignoreRegistration: "IGNORE_REGISTRATION"
        }
    }

    /// The members the action adds to its rule on the wire: `action`, and `sequences`,
    /// `maxTimeSeconds` or (registration offers read in the older form) `methods` where the
    /// action has them.
    var members: [String: JSONValue] {
        var members: [String: JSONValue] = ["action": .string(name)]
        switch self {
        case .triggerAuthentication(let sequences, let maxTimeSeconds):
            members["sequences"] = .array(sequences.map { .array($0.map(JSONValue.string)) })
            if let maxTimeSeconds { members["maxTimeSeconds"] = .int(Int64(maxTimeSeconds)) }
        case .suggestRegistration(let offer), .enforceRegistration(let offer):
            if offer.writtenAsMethods {
                members["methods"] = .array(offer.methods.map(JSONValue.string))
            } else {
                members["sequences"] = .array(offer.sequences.map { .array($0.map(JSONValue.string)) })
            }
        case .allow, .deny, .ignoreRegistration:
            break
        }
        return members
    }

    // MARK: - Checks

    /// Checks the action's values: sequences and method lists non-empty and within limits,
    /// method names well formed, `maxTimeSeconds` in 1…3600.
    ///
    /// - Parameter path: The path of the rule.
    /// - Throws: `invalid_value`, `invalid_method_name` or `limit_exceeded`.
    func check(at path: NodePath) throws(RulesetError) {
        switch self {
        case .triggerAuthentication(let sequences, let maxTimeSeconds):
            try Self.checkSequences(sequences, at: path.member("sequences"))
            if let maxTimeSeconds, !(1...Self.maximumMaxTimeSeconds).contains(maxTimeSeconds) {
                throw RulesetError(
                    .invalidValue, at: path.member("maxTimeSeconds"),
                    "maxTimeSeconds must be from 1 to \(Self.maximumMaxTimeSeconds)")
            }
        case .suggestRegistration(let offer), .enforceRegistration(let offer):
            if offer.writtenAsMethods {
                try Self.checkMethods(offer.methods, at: path.member("methods"), what: "methods")
            } else {
                try Self.checkSequences(offer.sequences, at: path.member("sequences"))
            }
        case .allow, .deny, .ignoreRegistration:
            break
        }
    }

    /// The action names, for messages.
    static let names =
        "ALLOW, DENY, TRIGGER_AUTHENTICATION, SUGGEST_REGISTRATION, ENFORCE_REGISTRATION, IGNORE_REGISTRATION"

    private static func checkSequences(_ sequences: [[String]], at path: NodePath) throws(RulesetError) {
        try checkList(sequences, at: path, limit: maximumSequences, what: "sequences")
        for (i, sequence) in sequences.enumerated() {
            try checkMethods(sequence, at: path.index(i), what: "a sequence")
        }
    }

    private static func checkMethods(_ methods: [String], at path: NodePath, what: String) throws(RulesetError) {
        try checkList(methods, at: path, limit: maximumMethods, what: what)
        for (i, method) in methods.enumerated() where !isMethodName(method) {
            throw RulesetError(
                .invalidMethodName, at: path.index(i),
                "\(RulesetError.quote(method)) is not a method name: lowercase letters, digits and _, starting with a letter, at most 32")
        }
    }

    private static func checkList<T>(_ list: [T], at path: NodePath, limit: Int, what: String) throws(RulesetError) {
        guard !list.isEmpty else {
            throw RulesetError(.invalidValue, at: path, "\(what) must not be empty")
        }
        guard list.count <= limit else {
            throw RulesetError(.limitExceeded, at: path, "\(what) may have at most \(limit) entries")
        }
    }

    /// Whether `name` matches `^[a-z][a-z0-9_]{0,31}$`.
    static func isMethodName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 32, first.isASCIILowercase else { return false }
        return bytes.allSatisfy { $0.isASCIILowercase || $0.isASCIIDigit || $0 == UInt8(ascii: "_") }
    }
}
