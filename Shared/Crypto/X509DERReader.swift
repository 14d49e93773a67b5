/// A strict, bounded reader of DER (ITU-T X.690 §10) for the ASN.1 structures that OpenSSL does
/// not parse for us: Android Key Attestation's `KeyDescription` (1.3.6.1.4.1.11129.2.1.17),
/// Apple's nonce extension (1.2.840.113635.100.8.2), the FIDO AAGUID extension, extended key
/// usage lists, and so on.
///
/// A reader is a cursor over one level of TLV elements. Reading a SEQUENCE, SET or `[n] EXPLICIT`
/// element returns a new reader over its contents, so nested structures are walked level by level
/// and the reader itself never recurses:
///
/// ```swift
/// // Apple anonymous attestation (WebAuthn §8.8): SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
/// var outer = X509DERReader(extensionValue)
/// var seq = try outer.readSequence()
/// try outer.finish()
/// var tagged = try seq.readExplicit(1)
/// let nonce = try tagged.readOctetString()
/// try tagged.finish()
/// ```
///
/// Every read checks DER rules: definite, minimally encoded lengths of at most four octets;
/// minimally encoded tag numbers (high-tag-number form, as in Android's `[701]`, is supported up
/// to 2^28 - 1); minimal INTEGER encodings; BOOLEAN as 0x00 or 0xFF; BIT STRING padding bits that
/// are zero; OIDs without redundant leading octets. Lengths are bounded by the bytes actually
/// present, so a reader never reads past its input and never traps on malformed data: every
/// failure is a thrown ``CryptoError`` whose description names the rule, never the content.
///
/// IMPLICIT tagging is handled by passing the expected tag to the primitive readers, e.g.
/// `readInteger(tag: .contextSpecific(3, constructed: false))`.
public struct X509DERReader: Sendable {
    // MARK: - Tags

    /// An identifier octet (or octets): class, primitive/constructed, tag number.
    public struct Tag: Sendable, Hashable, CustomStringConvertible {
        public enum TagClass: UInt8, Sendable, Hashable {
            case universal = 0, application = 1, contextSpecific = 2, `private` = 3
        }

        public let tagClass: TagClass
        public let isConstructed: Bool
        public let number: UInt32

        public init(_ tagClass: TagClass, number: UInt32, constructed: Bool) {
            self.tagClass = tagClass
            self.number = number
            self.isConstructed = constructed
        }

        /// A context-specific tag `[n]`; constructed by default, as `[n] EXPLICIT` always is.
        public static func contextSpecific(_ number: UInt32, constructed: Bool = true) -> Tag {
            Tag(.contextSpecific, number: number, constructed: constructed)
        }

        public static let boolean = Tag(.universal, number: 1, constructed: false)
        public static let integer = Tag(.universal, number: 2, constructed: false)
        public static let bitString = Tag(.universal, number: 3, constructed: false)
        public static let octetString = Tag(.universal, number: 4, constructed: false)
        public static let null = Tag(.universal, number: 5, constructed: false)
        public static let objectIdentifier = Tag(.universal, number: 6, constructed: false)
        public static let enumerated = Tag(.universal, number: 10, constructed: false)
        public static let utf8String = Tag(.universal, number: 12, constructed: false)
        public static let sequence = Tag(.universal, number: 16, constructed: true)
        public static let set = Tag(.universal, number: 17, constructed: true)
        public static let printableString = Tag(.universal, number: 19, constructed: false)
        public static let ia5String = Tag(.universal, number: 22, constructed: false)
        public static let utcTime = Tag(.universal, number: 23, constructed: false)
        public static let generalizedTime = Tag(.universal, number: 24, constructed: false)

        public var description: String {
            let form = isConstructed ? "constructed" : "primitive"
            switch tagClass {
            case .universal: return "UNIVERSAL \(number) (\(form))"
            case .application: return "[APPLICATION \(number)] (\(form))"
            case .contextSpecific: return "[\(number)] (\(form))"
            case .private: return "[PRIVATE \(number)] (\(form))"
            }
        }
    }

    // MARK: - Elements

    /// One TLV element.
    public struct Element: Sendable {
        public let tag: Tag
        /// The content octets (the V of TLV).
        public let content: ArraySlice<UInt8>
        /// The whole encoding: identifier, length and content.
        public let encoded: ArraySlice<UInt8>

        /// The content octets as an array.
        public var contentBytes: [UInt8] { Array(content) }

        /// A reader over the content, for constructed elements.
        ///
        /// - Throws: ``CryptoError`` when the element is primitive.
        public func reader() throws -> X509DERReader {
            guard tag.isConstructed else { throw CryptoError("DER: \(tag) is not constructed") }
            return X509DERReader(slice: content)
        }
    }

    // MARK: - State

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    /// Limits that keep a hostile input cheap to reject.
    public enum Limits {
        /// Length fields of more than four octets (4 GiB) are refused.
        public static let maximumLengthOctets = 4
        /// Tag numbers above 2^28 - 1 (four base-128 octets) are refused.
        public static let maximumTagNumberOctets = 4
        /// OBJECT IDENTIFIER contents longer than this are refused.
        public static let maximumOIDLength = 128
        /// ``X509DERReader/validate(_:maximumDepth:)`` refuses deeper nesting than this.
        public static let maximumDepth = 32
    }

    /// A reader over `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes[...]
        self.position = bytes.startIndex
    }

    /// A reader over `slice` (indices are those of the slice's base array).
    public init(slice: ArraySlice<UInt8>) {
        self.bytes = slice
        self.position = slice.startIndex
    }

    /// Whether every element at this level has been read.
    public var isAtEnd: Bool { position >= bytes.endIndex }

    /// Bytes left at this level.
    public var remainingCount: Int { bytes.endIndex - position }

    /// Throws unless every element at this level has been read (no trailing data).
    public func finish() throws {
        guard isAtEnd else { throw CryptoError("DER: \(remainingCount) unexpected trailing bytes") }
    }

    // MARK: - Generic reads

    /// The tag of the next element without consuming it; nil at the end.
    public func peekTag() throws -> Tag? {
        guard !isAtEnd else { return nil }
        var copy = self
        return try copy.readIdentifier()
    }

    /// Reads the next element, whatever its tag.
    public mutating func readElement() throws -> Element {
        let start = position
        let tag = try readIdentifier()
        let length = try readLength()
        guard length <= remainingCount else { throw CryptoError("DER: length exceeds the available data") }
        let content = bytes[position..<(position + length)]
        position += length
        return Element(tag: tag, content: content, encoded: bytes[start..<position])
    }

    /// Reads the next element and checks its tag.
    public mutating func readElement(_ expected: Tag) throws -> Element {
        var copy = self
        let element = try copy.readElement()
        guard element.tag == expected else {
            throw CryptoError("DER: expected \(expected), found \(element.tag)")
        }
        self = copy
        return element
    }

    /// Reads the next element if it has tag `expected`; nil (consuming nothing) otherwise,
    /// including at the end. For OPTIONAL and DEFAULT components.
    public mutating func readOptionalElement(_ expected: Tag) throws -> Element? {
        guard try peekTag() == expected else { return nil }
        return try readElement(expected)
    }

    /// Skips the next element.
    public mutating func skipElement() throws { _ = try readElement() }

    /// Reads every remaining element at this level.
    public mutating func readAllElements() throws -> [Element] {
        var out: [Element] = []
        while !isAtEnd { out.append(try readElement()) }
        return out
    }

    // MARK: - Constructed types

    /// Reads a SEQUENCE and returns a reader over its components.
    public mutating func readSequence(tag: Tag = .sequence) throws -> X509DERReader {
        try readElement(tag).reader()
    }

    /// Reads a SET (or SET OF) and returns a reader over its members.
    public mutating func readSet(tag: Tag = .set) throws -> X509DERReader {
        try readElement(tag).reader()
    }

    /// Reads `[number] EXPLICIT` (context-specific, constructed) and returns a reader over the
    /// wrapped value; the caller reads the value and calls ``finish()`` on the returned reader.
    public mutating func readExplicit(_ number: UInt32, tagClass: Tag.TagClass = .contextSpecific) throws -> X509DERReader {
        try readElement(Tag(tagClass, number: number, constructed: true)).reader()
    }

    /// ``readExplicit(_:tagClass:)`` for an OPTIONAL component: nil when the next element has
    /// another tag or there is none.
    public mutating func readOptionalExplicit(_ number: UInt32, tagClass: Tag.TagClass = .contextSpecific) throws -> X509DERReader? {
        try readOptionalElement(Tag(tagClass, number: number, constructed: true))?.reader()
    }

    // MARK: - Primitive types

    /// Reads a BOOLEAN (DER: one octet, 0x00 or 0xFF).
    public mutating func readBoolean(tag: Tag = .boolean) throws -> Bool {
        let c = try readElement(tag).content
        guard c.count == 1, let b = c.first, b == 0x00 || b == 0xFF else {
            throw CryptoError("DER: BOOLEAN must be one octet, 0x00 or 0xFF")
        }
        return b == 0xFF
    }

    /// Reads an INTEGER and returns its content octets: big-endian two's complement, minimal.
    public mutating func readInteger(tag: Tag = .integer) throws -> [UInt8] {
        let c = try readElement(tag).content
        try Self.checkMinimalInteger(c)
        return Array(c)
    }

    /// Reads an INTEGER that fits in `Int` (64-bit); larger values are refused.
    public mutating func readInt(tag: Tag = .integer) throws -> Int {
        try Self.int(fromTwosComplement: readInteger(tag: tag))
    }

    /// Reads a non-negative INTEGER as unsigned big-endian magnitude (no sign octet), e.g. a
    /// serial number or an RSA modulus. Negative values are refused.
    public mutating func readUnsignedInteger(tag: Tag = .integer) throws -> [UInt8] {
        let c = try readInteger(tag: tag)
        guard c[0] & 0x80 == 0 else { throw CryptoError("DER: INTEGER is negative") }
        let trimmed = Array(c.drop { $0 == 0 })
        return trimmed.isEmpty ? [0] : trimmed
    }

    /// Reads an ENUMERATED that fits in `Int`.
    public mutating func readEnumerated(tag: Tag = .enumerated) throws -> Int {
        let c = try readElement(tag).content
        try Self.checkMinimalInteger(c)
        return try Self.int(fromTwosComplement: Array(c))
    }

    /// Reads an OCTET STRING (primitive, as DER requires).
    public mutating func readOctetString(tag: Tag = .octetString) throws -> [UInt8] {
        try readElement(tag).contentBytes
    }

    /// Reads a BIT STRING: its bytes and the number of unused bits in the last one (DER: those
    /// bits are zero).
    public mutating func readBitString(tag: Tag = .bitString) throws -> (bytes: [UInt8], unusedBits: Int) {
        let c = try readElement(tag).content
        guard let unused = c.first, unused <= 7 else { throw CryptoError("DER: malformed BIT STRING") }
        let body = c.dropFirst()
        if body.isEmpty {
            guard unused == 0 else { throw CryptoError("DER: malformed BIT STRING") }
            return ([], 0)
        }
        guard body.last! & ~(0xFF << unused) == 0 else { throw CryptoError("DER: BIT STRING padding bits are not zero") }
        return (Array(body), Int(unused))
    }

    /// Reads a NULL.
    public mutating func readNull(tag: Tag = .null) throws {
        guard try readElement(tag).content.isEmpty else { throw CryptoError("DER: NULL with content") }
    }

    /// Reads an OBJECT IDENTIFIER in dotted form ("1.3.6.1.4.1.11129.2.1.17").
    public mutating func readObjectIdentifier(tag: Tag = .objectIdentifier) throws -> String {
        try Self.dottedOID(fromContent: readElement(tag).content)
    }

    /// Reads a UTF8String, PrintableString or IA5String (or `tag`) as a String; invalid UTF-8
    /// is refused.
    public mutating func readString(tag: Tag? = nil) throws -> String {
        let element = try readElement()
        if let tag {
            guard element.tag == tag else { throw CryptoError("DER: expected \(tag), found \(element.tag)") }
        } else {
            guard [Tag.utf8String, .printableString, .ia5String].contains(element.tag) else {
                throw CryptoError("DER: expected a string, found \(element.tag)")
            }
        }
        guard let s = String(validating: element.content, as: UTF8.self) else { throw CryptoError("DER: string is not valid UTF-8") }
        return s
    }

    // MARK: - Whole-structure validation

    /// Checks that `bytes` is exactly one DER element whose constructed parts, recursively, are
    /// well-formed DER (definite minimal lengths, no trailing data at any level, SEQUENCE and
    /// SET constructed, strings and other simple universal types primitive). Contents of
    /// primitive elements (OCTET STRING, BIT STRING) are not descended into.
    ///
    /// - Throws: ``CryptoError`` naming the rule broken, or when nesting exceeds `maximumDepth`.
    public static func validate(_ bytes: [UInt8], maximumDepth: Int = Limits.maximumDepth) throws {
        var reader = X509DERReader(bytes)
        let element = try reader.readElement()
        try reader.finish()
        try validate(element, depth: 0, maximumDepth: maximumDepth)
    }

    private static func validate(_ element: Element, depth: Int, maximumDepth: Int) throws {
        let tag = element.tag
        if tag.tagClass == .universal {
            // EXTERNAL (8), EMBEDDED PDV (11), SEQUENCE (16), SET (17), CHARACTER STRING (29)
            // are the constructed universal types; every other one is primitive in DER.
            let constructedTypes: Set<UInt32> = [8, 11, 16, 17, 29]
            guard tag.isConstructed == constructedTypes.contains(tag.number) else {
                throw CryptoError("DER: \(tag) has the wrong form")
            }
            switch tag.number {
            case 1:
                guard element.content.count == 1, element.content.first == 0x00 || element.content.first == 0xFF else {
                    throw CryptoError("DER: BOOLEAN must be one octet, 0x00 or 0xFF")
                }
            case 2, 10: try checkMinimalInteger(element.content)
            case 6: _ = try dottedOID(fromContent: element.content)
            default: break
            }
        }
        guard tag.isConstructed else { return }
        guard depth < maximumDepth else { throw CryptoError("DER: nesting deeper than \(maximumDepth)") }
        var inner = X509DERReader(slice: element.content)
        while !inner.isAtEnd {
            try validate(inner.readElement(), depth: depth + 1, maximumDepth: maximumDepth)
        }
    }

    // MARK: - Encoding rules

    private mutating func readOctet() throws -> UInt8 {
        guard position < bytes.endIndex else { throw CryptoError("DER: unexpected end of data") }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func readIdentifier() throws -> Tag {
        let first = try readOctet()
        let tagClass = Tag.TagClass(rawValue: first >> 6)!
        let constructed = first & 0x20 != 0
        var number = UInt32(first & 0x1F)
        if number == 0x1F {
            // High-tag-number form (X.690 §8.1.2.4): base-128, minimal, only for numbers ≥ 31.
            number = 0
            var count = 0
            while true {
                let b = try readOctet()
                count += 1
                guard count <= Limits.maximumTagNumberOctets else { throw CryptoError("DER: tag number too large") }
                guard !(count == 1 && b == 0x80) else { throw CryptoError("DER: tag number not minimally encoded") }
                number = number << 7 | UInt32(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
            guard number >= 0x1F else { throw CryptoError("DER: tag number not minimally encoded") }
        }
        return Tag(tagClass, number: number, constructed: constructed)
    }

    private mutating func readLength() throws -> Int {
        let first = try readOctet()
        if first < 0x80 { return Int(first) }
        let count = Int(first & 0x7F)
        guard count != 0 else { throw CryptoError("DER: indefinite length is not DER") }
        guard count <= Limits.maximumLengthOctets else { throw CryptoError("DER: length field too long") }
        var length = 0
        for i in 0..<count {
            let b = try readOctet()
            guard !(i == 0 && b == 0) else { throw CryptoError("DER: length not minimally encoded") }
            length = length << 8 | Int(b)
        }
        guard length >= 0x80 else { throw CryptoError("DER: length not minimally encoded") }
        return length
    }

    private static func checkMinimalInteger(_ c: ArraySlice<UInt8>) throws {
        guard let first = c.first else { throw CryptoError("DER: empty INTEGER") }
        if c.count > 1 {
            let second = c[c.startIndex + 1]
            guard !(first == 0x00 && second & 0x80 == 0), !(first == 0xFF && second & 0x80 != 0) else {
                throw CryptoError("DER: INTEGER not minimally encoded")
            }
        }
    }

    private static func int(fromTwosComplement c: [UInt8]) throws -> Int {
        guard !c.isEmpty, c.count <= 8 else { throw CryptoError("DER: INTEGER out of range") }
        var v: Int64 = c[0] & 0x80 != 0 ? -1 : 0
        for b in c { v = v << 8 | Int64(b) }
        return Int(v)
    }

    /// The dotted form of OBJECT IDENTIFIER content octets (X.690 §8.19).
    public static func dottedOID<C: Collection<UInt8>>(fromContent content: C) throws -> String {
        guard !content.isEmpty, content.count <= Limits.maximumOIDLength else { throw CryptoError("DER: malformed OBJECT IDENTIFIER") }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        var startOfArc = true
        for b in content {
            guard !(startOfArc && b == 0x80) else { throw CryptoError("DER: OBJECT IDENTIFIER arc not minimally encoded") }
            guard value >> 57 == 0 else { throw CryptoError("DER: OBJECT IDENTIFIER arc too large") }
            value = value << 7 | UInt64(b & 0x7F)
            startOfArc = b & 0x80 == 0
            if startOfArc {
                arcs.append(value)
                value = 0
            }
        }
        guard startOfArc else { throw CryptoError("DER: truncated OBJECT IDENTIFIER") }
        let first = arcs[0]
        let head: [UInt64] = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}
