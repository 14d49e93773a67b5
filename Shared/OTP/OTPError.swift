import Platform

/// Why a one-time password, a secret, an otpauth URI or a one-time code was refused.
///
/// `code` is stable and meant for problem+json bodies, metrics and tests; `description` names
/// only the code. The detail (which parameter, which limit, which position) is in
/// `debugDescription`, for debugging: it never carries a secret, a presented code or a
/// generated code.
public struct OTPError: CodedError {
    /// A stable error code, `rawValue` in snake_case (`code_mismatch`).
    ///
    /// A struct over a private enum so that codes can be added without breaking callers that
    /// switch over the ones they care about.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidSecret = "invalid_secret"
            case invalidBase32 = "invalid_base32"
            case invalidParameter = "invalid_parameter"
            case invalidKey = "invalid_key"
            case timeOutOfRange = "time_out_of_range"
            case malformedCode = "malformed_code"
            case codeMismatch = "code_mismatch"
            case replayedCode = "replayed_code"
            case invalidURI = "invalid_uri"
        }

        private let base: Base

        /// A shared secret outside ``OTPSecret/byteCountRange`` (RFC 4226 §4 R6 asks for at
        /// least 128 bits).
        public static let invalidSecret = Code(base: .invalidSecret)
        /// Text that is not RFC 4648 base32: a character outside the alphabet, a length no
        /// encoder produces, misplaced padding or non-zero trailing bits.
        public static let invalidBase32 = Code(base: .invalidBase32)
        /// A parameter out of range: digits outside 6…8, a period outside 1…3600 s, a drift
        /// window or look-ahead over its limit, a label with a colon or over its length limit.
        public static let invalidParameter = Code(base: .invalidParameter)
        /// A storage key for ``OneTimeCode`` shorter than ``OneTimeCode/minimumKeyByteCount``.
        public static let invalidKey = Code(base: .invalidKey)
        /// A time before T0 (the Unix epoch) or so far ahead that the time step overflows.
        public static let timeOutOfRange = Code(base: .timeOutOfRange)
        /// A presented code that is not exactly the expected number of ASCII digits.
        public static let malformedCode = Code(base: .malformedCode)
        /// A well-formed code that matches no counter or time step in the window.
        public static let codeMismatch = Code(base: .codeMismatch)
        /// A code that matches only a time step at or before the last one already accepted.
        public static let replayedCode = Code(base: .replayedCode)
        /// An otpauth URI that is malformed, of an unknown type, lacks the secret, repeats a
        /// parameter, or whose issuer parameter contradicts the label's issuer.
        public static let invalidURI = Code(base: .invalidURI)

        /// The stable snake_case name, e.g. `code_mismatch`.
        public var rawValue: String { base.rawValue }
        /// The same as ``rawValue``.
        public var description: String { base.rawValue }
    }

    /// The stable code.
    public let code: Code
    /// What exactly was wrong: parameter names, limits and positions only.
    public let detail: String
    /// The file where the error was raised (`#fileID`).
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    /// An error with its code and a detail for debugging.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - detail: What was wrong; never a secret or a code.
    init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }





    // MARK: - Factories shared by several types

    /// A digit count outside ``HOTP/digitRange``.
    static func invalidDigits(_ digits: Int, file: String = #fileID, line: Int = #line) -> OTPError {
        OTPError(.invalidParameter, "digits \(digits) outside 6...8", file: file, line: line)
    }

    /// A presented code of the wrong length or with a character that is not an ASCII digit.
    static func malformedCode(expectedDigits: Int, file: String = #fileID, line: Int = #line) -> OTPError {
        OTPError(.malformedCode, "expected exactly \(expectedDigits) ASCII digits", file: file, line: line)
    }
}
