import Platform

/// Why a FIDO policy document was refused: a stable code, the JSON Pointer (RFC 6901) of the
/// first member at fault (`""` for the document itself), and a fixed reason.
public struct FIDOPolicyError: CodedError {
    /// A stable code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            case malformed = "policy_document_malformed"
            case invalid = "policy_document_invalid"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a JSON object (syntax, invalid UTF-8, duplicate member names).
        public static let malformed = Code(.malformed)
        /// A member that is unknown, of the wrong type, out of range, or incoherent with another.
        public static let invalid = Code(.invalid)

        /// Every code.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// JSON Pointer of the member at fault, e.g. `/allowedAlgorithms/2`.
    public let path: String
    /// A fixed reason (never a value from the document).
    public let reason: String

    /// Where the error was raised.
    public let file: String
    public let line: Int

    public init(_ code: Code, path: String, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.path = path
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// The JSON pointer and the reason.
    public var detail: String { "\(path.isEmpty ? "/" : path): \(reason)" }

    public var description: String { "FIDOPolicyError(\(code), \(path.isEmpty ? "/" : path))" }

    /// A JSON Pointer from member names and indices.
    static func pointer(_ components: [String]) -> String {
        components.map { "/" + MetadataJSON.escape($0) }.joined()
    }
}
