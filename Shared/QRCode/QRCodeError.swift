import Platform

/// Why a text could not be encoded as a QR code.
///
/// `code` is stable and meant for problem+json bodies, metrics and tests; `description` names
/// only the code. The detail (which limit, which errno) is in `debugDescription`; neither ever
/// contains the text, which for an enrolment QR code is an otpauth URI with its secret.
public struct QRCodeError: CodedError {
    /// A stable error code, `rawValue` in snake_case (`input_too_long`).
    ///
    /// A struct over a private enum so that codes can be added without breaking callers that
    /// switch over the ones they care about.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case emptyInput = "empty_input"
            case inputTooLong = "input_too_long"
            case invalidInput = "invalid_input"
            case capacityExceeded = "capacity_exceeded"
            case encodingFailed = "encoding_failed"
        }

        private let base: Base

        /// The text is empty; libqrencode refuses it.
        public static let emptyInput = Code(base: .emptyInput)
        /// The text is longer than ``QRCode/maximumInputByteCount`` UTF-8 bytes.
        public static let inputTooLong = Code(base: .inputTooLong)
        /// The text contains a NUL character, which a C string cannot carry.
        public static let invalidInput = Code(base: .invalidInput)
        /// The text does not fit the largest QR code (version 40) at the requested error
        /// correction level (libqrencode's `ERANGE`); a lower level may hold it.
        public static let capacityExceeded = Code(base: .capacityExceeded)
        /// libqrencode failed otherwise, e.g. out of memory (`ENOMEM`).
        public static let encodingFailed = Code(base: .encodingFailed)

        /// The stable snake_case name, e.g. `input_too_long`.
        public var rawValue: String { base.rawValue }
        /// The same as ``rawValue``.
        public var description: String { base.rawValue }
    }

    /// The stable code.
    public let code: Code
    /// What exactly was wrong: limits and errno values only.
    public let detail: String
    /// The file where the error was raised (`#fileID`).
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    /// An error with its code and a detail for debugging.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - detail: What was wrong; never the text being encoded.
    init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }




}
