import Platform

/// Why a ruleset was refused: a stable ``code``, the JSON ``path`` of the offending node and a
/// human ``message``.
///
/// Every `RulesetError` means "invalid ruleset": the HTTP edge answers 422 with a problem+json
/// body whose code is ``Code-swift.struct/rawValue`` and whose detail is ``description``.
///
/// Paths name nodes of the wire document the way a reader would point at them:
/// `rules[3].when.all[1].op`, `rules[0].sequences[1][0]`, `rules[2].when.value.of`. The document
/// itself is `$`. The message may quote short parts of the ruleset (an operator, a member name),
/// which is tenant configuration, never personal data; long strings are cut.
public struct RulesetError: CodedError {
    /// A stable error code, `rawValue` in snake_case (`unknown_member`).
    ///
    /// A struct over a private enum so that codes can be added without breaking callers that
    /// switch over the ones they care about.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidType = "invalid_type"
            case unknownMember = "unknown_member"
            case missingMember = "missing_member"
            case invalidValue = "invalid_value"
            case invalidRuleName = "invalid_rule_name"
            case duplicateRuleName = "duplicate_rule_name"
            case unknownAction = "unknown_action"
            case actionNotAllowed = "action_not_allowed"
            case invalidMethodName = "invalid_method_name"
            case invalidFact = "invalid_fact"
            case unknownOperator = "unknown_operator"
            case invalidOperand = "invalid_operand"
            case invalidCIDR = "invalid_cidr"
            case unknownLocationList = "unknown_location_list"
            case limitExceeded = "limit_exceeded"
            case unknownMethod = "unknown_method"
            case sequenceCannotConfirm = "sequence_cannot_confirm"
        }

        private let base: Base

        /// A node has the wrong JSON type (the document is not an object, `rules` is not an
        /// array, a name is not a string, a condition is not an object…).
        public static let invalidType = Code(base: .invalidType)
        /// An object has a member this node does not take: a typo (`sequence`), or a member of
        /// another action (`methods` on a `TRIGGER_AUTHENTICATION` rule).
        public static let unknownMember = Code(base: .unknownMember)
        /// A required member is absent (`name`, `action`, `sequences`, `fact`, `op`, `value`…).
        public static let missingMember = Code(base: .missingMember)
        /// A value of the right type is out of range or empty (`maxTimeSeconds` outside
        /// 1…3600, an empty `sequences` list, an empty sequence, an empty `methods` list).
        public static let invalidValue = Code(base: .invalidValue)
        /// A rule name is not 1–64 characters of `[A-Za-z0-9 _.-]`, or is the reserved `default`.
        public static let invalidRuleName = Code(base: .invalidRuleName)
        /// Two rules of one ruleset have the same name.
        public static let duplicateRuleName = Code(base: .duplicateRuleName)
        /// The action is none of `ALLOW`, `DENY`, `TRIGGER_AUTHENTICATION`,
        /// `SUGGEST_REGISTRATION`, `ENFORCE_REGISTRATION`, `IGNORE_REGISTRATION`.
        public static let unknownAction = Code(base: .unknownAction)
        /// The action exists but not for this kind of ruleset (`ALLOW` in a registration
        /// decision ruleset).
        public static let actionNotAllowed = Code(base: .actionNotAllowed)
        /// A method name does not match `^[a-z][a-z0-9_]{0,31}$`.
        public static let invalidMethodName = Code(base: .invalidMethodName)
        /// A fact path has an unknown root, too few or too many segments, or a bad segment.
        public static let invalidFact = Code(base: .invalidFact)
        /// `op` is not one of the operators.
        public static let unknownOperator = Code(base: .unknownOperator)
        /// `value` does not suit the operator (an object for `gt`, a number for `exists`, a
        /// latitude out of range for `withinKm`…).
        public static let invalidOperand = Code(base: .invalidOperand)
        /// An `inCidr` block is not `address/prefix` with a valid address, a prefix in range and
        /// no host bits set.
        public static let invalidCIDR = Code(base: .invalidCIDR)
        /// A `withinKm` operand names a location list the tenant does not have.
        public static let unknownLocationList = Code(base: .unknownLocationList)
        /// A limit is exceeded: rules, nesting depth, condition nodes, list entries, string
        /// length (see ``Ruleset/Limits``).
        public static let limitExceeded = Code(base: .limitExceeded)
        /// A well-formed method name the service does not have (`fido3`, `smsotp`): checked
        /// when a ruleset is saved, by ``Ruleset/checkMethods(_:for:)``.
        public static let unknownMethod = Code(base: .unknownMethod)
        /// A rule that applies to transaction confirmations offers a sequence without a step
        /// that signs the transaction's details (only OTPs, say): such a sign-in could never
        /// confirm the transaction. Checked by ``Ruleset/checkMethods(_:for:)``.
        public static let sequenceCannotConfirm = Code(base: .sequenceCannotConfirm)

        /// The stable snake_case name, e.g. `unknown_member`.
        public var rawValue: String { base.rawValue }
        /// The same as ``rawValue``.
        public var description: String { base.rawValue }
    }

    /// What kind of problem this is.
    public let code: Code
    /// The JSON path of the offending node, e.g. `rules[3].when.all[1].op`; `$` for the document.
    public let path: String
    /// A sentence for the tenant administrator saying what is wrong and what is expected.
    public let message: String
    public let file: String
    public let line: Int

    /// An error at a node of the ruleset.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - path: Where, as built while walking the document.
    ///   - message: What is wrong, for a human.
    init(_ code: Code, at path: NodePath, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.path = path.description
        self.message = message
        self.file = file
        self.line = line
    }

    /// `code at path: message`, e.g. `unknown_member at rules[0].sequence: …`.
    public var description: String { "\(code) at \(path): \(message)" }

    /// The description and the place in the source that refused the ruleset.
    /// The node and the message: with the code, what equality and hashing compare (where the
    /// error was raised does not count).
    public var detail: String { "\(path): \(message)" }

    /// A string from the ruleset as it may appear in a message: quoted, at most 64 characters.
    static func quote(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > 64 else { return "\"\(text)\"" }
        var cut = String.UnicodeScalarView()
        cut.append(contentsOf: scalars.prefix(61))
        return "\"\(String(cut))…\""
    }
}

// MARK: - Paths

/// The JSON path of a node, built while walking a ruleset document: `rules[3].when.all[1].op`.
///
/// The empty path is the document itself and reads `$`. Paths inside a rule, as the trace of
/// ``CompiledRuleset/explain(_:)`` shows them, start at `when`.
struct NodePath: Sendable, Hashable, CustomStringConvertible {
    private(set) var text: String

    /// The document itself.
    static let root = NodePath(text: "")

    /// The path of a rule's condition, relative to the rule.
    static let when = NodePath(text: "when")

    /// The path of a member of this node.
    func member(_ name: String) -> NodePath {
        NodePath(text: text.isEmpty ? name : "\(text).\(name)")
    }

    /// The path of an element of this node.
    func index(_ position: Int) -> NodePath {
        NodePath(text: "\(text)[\(position)]")
    }

    /// The dotted and indexed text, `$` for the document.
    var description: String { text.isEmpty ? "$" : text }
}
