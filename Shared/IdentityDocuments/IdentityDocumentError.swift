/// Why document text was refused: a stable ``Code`` and, where one is to blame, the field or
/// data element (`birthDate`, `DBA`, …). The description never carries the document's data.
public struct IdentityDocumentError: Error, Hashable, CustomStringConvertible {
    /// A stable code (a struct over a string, so that codes can be added without breaking
    /// callers' `switch`es).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Longer than any document of its kind.
        public static let tooLong = Code("too_long")
        /// Lines, lengths or separators not those of the format.
        public static let layout = Code("layout")
        /// A byte outside the field's character set.
        public static let characterSet = Code("character_set")
        /// A 7-3-1 check digit that does not match its field (ICAO 9303 Part 3 §4.9).
        public static let checkDigit = Code("check_digit")
        /// A date that is not a day of the calendar.
        public static let date = Code("date")
        /// A field whose value its format does not allow (document code, sex, names, country).
        public static let field = Code("field")
        /// A document number longer than 9 characters (continued in the optional data);
        /// not read here.
        public static let unsupported = Code("unsupported")
        /// AAMVA: the header (compliance indicator, separators, `ANSI `, numbers) is wrong.
        public static let header = Code("header")
        /// AAMVA: an AAMVA version this parser does not read.
        public static let version = Code("version")
        /// AAMVA: a subfile designator, offset or length that does not fit the file.
        public static let subfile = Code("subfile")
        /// Bytes after the last subfile.
        public static let trailingData = Code("trailing_data")
        /// A mandatory data element is missing.
        public static let missingElement = Code("missing_element")
        /// A data element given twice.
        public static let duplicateElement = Code("duplicate_element")
    }

    public let code: Code
    /// The field or element to blame, if one is.
    public let field: String?

    public init(_ code: Code, field: String? = nil) {
        self.code = code
        self.field = field
    }

    public var description: String { field.map { "\(code.rawValue) (\($0))" } ?? code.rawValue }
}
