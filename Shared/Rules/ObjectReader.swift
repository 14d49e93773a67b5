import JSON

/// Reads the members of one JSON object of a ruleset document, refusing members it does not
/// know and naming the path of anything wrong.
///
/// Unknown members are refused before anything else is read, in sorted order, so that a typo
/// (`"sequence"` for `"sequences"`) is reported as what it is rather than as the required member
/// being missing, and so that the same document always gives the same error.
struct ObjectReader {
    /// The members.
    let members: [String: JSONValue]
    /// The path of the object.
    let path: NodePath

    /// Opens `value` as an object that may only have the `allowed` members.
    ///
    /// - Parameters:
    ///   - value: The node.
    ///   - path: Its path.
    ///   - what: What the node is, for messages ("a rule", "a condition").
    ///   - allowed: The members it may have.
    /// - Throws: `invalid_type` when `value` is not an object; `unknown_member` at the first
    ///   (sorted) member that is not allowed.
    init(_ value: JSONValue, at path: NodePath, what: String, allowed: Set<String>) throws(RulesetError) {
        guard case .object(let members) = value else {
            throw RulesetError(.invalidType, at: path, "\(what) must be a JSON object")
        }
        self.members = members
        self.path = path
        if let unknown = members.keys.filter({ !allowed.contains($0) }).min() {
            throw RulesetError(
                .unknownMember, at: path.member(unknown),
                "\(RulesetError.quote(unknown)) is not a member of \(what); expected \(Self.list(allowed))")
        }
    }

    /// A member that must be present.
    ///
    /// - Throws: `missing_member` at the member's path.
    func required(_ name: String, _ expectation: String) throws(RulesetError) -> JSONValue {
        guard let value = members[name] else {
            throw RulesetError(.missingMember, at: path.member(name), "\(name) is required: \(expectation)")
        }
        return value
    }

    /// A member that must be present and a string.
    ///
    /// - Throws: `missing_member`, or `invalid_type` when it is not a string.
    func requiredString(_ name: String, _ expectation: String) throws(RulesetError) -> String {
        let value = try required(name, expectation)
        guard case .string(let text) = value else {
            throw RulesetError(.invalidType, at: path.member(name), "\(name) must be a string: \(expectation)")
        }
        return text
    }

    /// A member that must be present and an array.
    ///
    /// - Throws: `missing_member`, or `invalid_type` when it is not an array.
    func requiredArray(_ name: String, _ expectation: String) throws(RulesetError) -> [JSONValue] {
        let value = try required(name, expectation)
        guard case .array(let elements) = value else {
            throw RulesetError(.invalidType, at: path.member(name), "\(name) must be an array: \(expectation)")
        }
        return elements
    }

    /// Refuses `name` when it is present: it belongs to another variant of this node.
    ///
    /// - Throws: `unknown_member` at the member's path.
    func refuse(_ name: String, because reason: String) throws(RulesetError) {
        if members[name] != nil {
            throw RulesetError(.unknownMember, at: path.member(name), "\(name) is not a member here: \(reason)")
        }
    }

    /// The allowed names, sorted, for messages: `action, maxTimeSeconds, name`.
    private static func list(_ names: Set<String>) -> String {
        names.sorted().joined(separator: ", ")
    }
}

// MARK: - Values

/// Checks on strings shared by reading and compiling, so that a ruleset built in code is held to
/// exactly the rules a ruleset read from JSON is.
enum StringRules {
    /// Whether `text` is within ``Ruleset/Limits/stringLength`` Unicode scalars.
    static func isShortEnough(_ text: String) -> Bool {
        // UTF-8 length bounds the scalar count from above: skip counting for short strings.
        text.utf8.count <= Ruleset.Limits.stringLength
            || text.unicodeScalars.count <= Ruleset.Limits.stringLength
    }

    /// Refuses a string over ``Ruleset/Limits/stringLength``.
    ///
    /// - Throws: `limit_exceeded` at `path`.
    static func checkLength(_ text: String, at path: NodePath) throws(RulesetError) {
        guard isShortEnough(text) else {
            throw RulesetError(
                .limitExceeded, at: path, "strings are limited to \(Ruleset.Limits.stringLength) characters")
        }
    }
}

extension UInt8 {
    /// Whether this byte is an ASCII digit, `0`–`9`.
    var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    /// Whether this byte is an ASCII lowercase letter, `a`–`z`.
    var isASCIILowercase: Bool { self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z") }
    /// Whether this byte is an ASCII letter.
    var isASCIILetter: Bool { isASCIILowercase || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z")) }
}
