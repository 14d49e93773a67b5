import Platform

/// Why ``CBORDecoder`` refused its input.
///
/// `code` is stable and safe to log or return to a client; `offset` is the byte position at
/// which the problem was found. Neither carries any of the input's content.
public struct CBORError: CodedError {
    /// A stable identifier of the failure, e.g. `cbor_truncated`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case truncated = "cbor_truncated"
            case trailingBytes = "cbor_trailing_bytes"
            case depthExceeded = "cbor_depth_exceeded"
            case tooManyItems = "cbor_too_many_items"
            case lengthExceeded = "cbor_length_exceeded"
            case inputTooLarge = "cbor_input_too_large"
            case indefiniteLengthNotAllowed = "cbor_indefinite_length_not_allowed"
            case nonMinimalEncoding = "cbor_non_minimal_encoding"
            case duplicateMapKey = "cbor_duplicate_map_key"
            case invalidUTF8 = "cbor_invalid_utf8"
            case reservedAdditionalInfo = "cbor_reserved_additional_info"
            case invalidSimpleValue = "cbor_invalid_simple_value"
            case unexpectedBreak = "cbor_unexpected_break"
            case invalidIndefiniteChunk = "cbor_invalid_indefinite_chunk"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The input ended inside a data item.
        public static let truncated = Code(.truncated)
        /// Bytes follow the top-level data item (use ``CBORDecoder/decodePrefix(_:from:)`` where that is expected).
        public static let trailingBytes = Code(.trailingBytes)
        /// Arrays, maps and tags nest deeper than ``CBORDecoder/Limits/maxDepth``.
        public static let depthExceeded = Code(.depthExceeded)
        /// More data items than ``CBORDecoder/Limits/maxItems``.
        public static let tooManyItems = Code(.tooManyItems)
        /// A string or collection longer than the limits, or than the input can hold.
        public static let lengthExceeded = Code(.lengthExceeded)
        /// The input is longer than ``CBORDecoder/Limits/maxInputLength``.
        public static let inputTooLarge = Code(.inputTooLarge)
        /// An indefinite-length string, array or map where the decoder does not allow them.
        public static let indefiniteLengthNotAllowed = Code(.indefiniteLengthNotAllowed)
        /// An integer, length or tag not in its shortest form.
        public static let nonMinimalEncoding = Code(.nonMinimalEncoding)
        /// A map holds the same key twice.
        public static let duplicateMapKey = Code(.duplicateMapKey)
        /// A text string is not valid UTF-8.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// Additional information 28–30, or 31 on a major type that has no indefinite form.
        public static let reservedAdditionalInfo = Code(.reservedAdditionalInfo)
        /// A two-byte simple value below 32 (not well-formed, RFC 8949 §3.3).
        public static let invalidSimpleValue = Code(.invalidSimpleValue)
        /// A "break" (0xFF) outside an indefinite-length item.
        public static let unexpectedBreak = Code(.unexpectedBreak)
        /// A chunk of an indefinite-length string that is not a definite string of the same type.
        public static let invalidIndefiniteChunk = Code(.invalidIndefiniteChunk)

        /// The stable string form, e.g. `cbor_duplicate_map_key`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What failed.
    public let code: Code
    /// The byte offset in the input at which it failed.
    public let offset: Int

    /// Where the error was raised.
    public let file: String
    public let line: Int

    public init(_ code: Code, at offset: Int, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.offset = offset
        self.file = file
        self.line = line
    }

    /// The position, the only detail a CBOR refusal carries.
    public var detail: String { "at byte \(offset)" }
    public var description: String { "CBORError(\(code) at byte \(offset))" }
}
