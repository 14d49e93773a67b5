/// The text of the PDF417 bar code of a US or Canadian driver's license or identification
/// card (AAMVA DL/ID Card Design Standard, Annex D "Mandatory PDF417 bar code"; the 2013, 2016
/// and 2020 editions, AAMVA versions 08, 09 and 10, share this layout).
///
/// Checked, in the order of D.12.3-D.12.5: the compliance indicator `@`, the data element
/// separator LF, the record separator RS, the segment terminator CR; the file type `ANSI `; the
/// issuer identification number (6 digits), AAMVA version, jurisdiction version and number of
/// entries; then one subfile designator per entry (type, offset, length: 4 digits each). The
/// subfiles follow the header in the order of their designators, each at its offset, starting
/// with its type and ending at its length with the segment terminator; the last one ends the
/// file (no trailing bytes).
///
/// Subfiles: exactly one `DL` or `ID` subfile is read; jurisdiction-specific subfiles (`Z` and
/// a letter, D.12.5.2) are bounds-checked and skipped, as the standard lets a reader that does
/// not know the jurisdiction's definitions; any other type is refused. In the DL/ID subfile each
/// data element is a three-letter identifier starting with `D` (the standard's own; a
/// jurisdiction's are in its Z subfile) and at least one printable ASCII character; elements
/// are separated by LF, none is empty or repeated. Elements this type does not name are
/// optional elements of the standard and are kept in ``elements`` unread. Mandatory here:
/// `DAQ` (customer id), `DCS` (family name), `DAC` (first name), `DBB` (birth date), `DBA`
/// (expiry), `DCG` (country: `USA` or `CAN`). Dates are `MMDDCCYY` in the US and `CCYYMMDD`
/// in Canada (D.12.5.1, "date format").
public struct AAMVADocument: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case driverLicense = "DL"
        case identificationCard = "ID"
    }

    /// The issuer identification number: which jurisdiction issued the card.
    public let issuerIdentificationNumber: String
    public let aamvaVersion: Int
    public let jurisdictionVersion: Int
    public let kind: Kind
    /// `DAQ`.
    public let customerID: String
    /// `DCS`.
    public let familyName: String
    /// `DAC`.
    public let firstName: String
    /// `DAD`, nil when absent or `NONE`.
    public let middleName: String?
    /// `DBB`.
    public let birthDate: CalendarDate
    /// `DBA`.
    public let expiryDate: CalendarDate
    /// `DCG`: `USA` or `CAN`.
    public let country: String
    /// `DAJ`, the jurisdiction code of the address, when present.
    public let jurisdiction: String?
    /// Every element of the DL/ID subfile, by identifier (trailing spaces of fixed-length
    /// fields kept).
    public let elements: [String: String]

    /// The largest text accepted: a PDF417 symbol holds at most 1,850 text characters.
    public static let maximumLength = 2048
    /// AAMVA versions read here: 08 (2013), 09 (2016), 10 (2020).
    public static let versions = 8...10
    static let headerLength = 21
    static let designatorLength = 10

    static let lf: UInt8 = 0x0A
    static let rs: UInt8 = 0x1E
    static let cr: UInt8 = 0x0D

    /// Parses and checks the bar code's text.
    ///
    /// - Throws: ``IdentityDocumentError`` naming the check that failed (and the element).
    public static func parse(_ text: String) throws(IdentityDocumentError) -> AAMVADocument {
        let b = Array(text.utf8)
        guard b.count <= maximumLength else { throw IdentityDocumentError(.tooLong) }
        guard b.count >= headerLength else { throw IdentityDocumentError(.header) }
        // D.12.3: "@", LF, RS, CR, "ANSI ".
        guard b[0] == UInt8(ascii: "@"), b[1] == lf, b[2] == rs, b[3] == cr, Array(b[4..<9]) == Array("ANSI ".utf8) else {
            throw IdentityDocumentError(.header)
        }
        guard let _ = CalendarDate.number(b[9..<15]), let version = CalendarDate.number(b[15..<17]),
            let jurisdictionVersion = CalendarDate.number(b[17..<19]), let entries = CalendarDate.number(b[19..<21]), entries >= 1
        else { throw IdentityDocumentError(.header) }
        guard versions.contains(version) else { throw IdentityDocumentError(.version) }
        let iin = String(decoding: b[9..<15], as: UTF8.self)

        // D.12.4: the subfile designators, then the subfiles in their order, contiguous.
        var position = headerLength + entries * designatorLength
        guard b.count >= position else { throw IdentityDocumentError(.subfile) }
        var main: (kind: Kind, body: ArraySlice<UInt8>)?
        for entry in 0..<entries {
            let d = headerLength + entry * designatorLength
            let type = Array(b[d..<d + 2])
            guard let offset = CalendarDate.number(b[d + 2..<d + 6]), let length = CalendarDate.number(b[d + 6..<d + 10]) else {
                throw IdentityDocumentError(.subfile)
            }
            // Type (2), at least one byte, the segment terminator.
            guard offset == position, length >= 4, offset + length <= b.count, Array(b[offset..<offset + 2]) == type,
                b[offset + length - 1] == cr
            else { throw IdentityDocumentError(.subfile) }
            let body = b[offset + 2..<offset + length - 1]
            if let kind = Kind(rawValue: String(decoding: type, as: UTF8.self)) {
                guard main == nil else { throw IdentityDocumentError(.subfile) }
                main = (kind, body)
            } else {
                // D.12.5.2: jurisdiction-specific subfiles, "Z" and the jurisdiction's letter.
                guard type[0] == UInt8(ascii: "Z"), (0x41...0x5A).contains(type[1]) else { throw IdentityDocumentError(.subfile) }
                guard !body.contains(cr) else { throw IdentityDocumentError(.subfile) }
            }
            position = offset + length
        }
        guard position == b.count else { throw IdentityDocumentError(.trailingData) }
        guard let main else { throw IdentityDocumentError(.subfile) }
        let elements = try Self.elements(main.body)

        func required(_ id: String) throws(IdentityDocumentError) -> String {
            guard let value = elements[id] else { throw IdentityDocumentError(.missingElement, field: id) }
            return value
        }
        func name(_ id: String) throws(IdentityDocumentError) -> String {
            let value = trimmed(try required(id))
            guard !value.isEmpty else { throw IdentityDocumentError(.field, field: id) }
            return value
        }
        let country = try required("DCG")
        guard country == "USA" || country == "CAN" else { throw IdentityDocumentError(.field, field: "DCG") }
        let customerID = trimmed(try required("DAQ"))
        guard !customerID.isEmpty else { throw IdentityDocumentError(.field, field: "DAQ") }
        let middle = elements["DAD"].map(trimmed)
        return AAMVADocument(
            issuerIdentificationNumber: iin, aamvaVersion: version, jurisdictionVersion: jurisdictionVersion, kind: main.kind,
            customerID: customerID, familyName: try name("DCS"), firstName: try name("DAC"),
            middleName: middle == nil || middle == "NONE" || middle?.isEmpty == true ? nil : middle,
            birthDate: try date(try required("DBB"), canadian: country == "CAN", element: "DBB"),
            expiryDate: try date(try required("DBA"), canadian: country == "CAN", element: "DBA"), country: country,
            jurisdiction: elements["DAJ"].map(trimmed), elements: elements)
    }

    /// The DL/ID subfile's data elements (after its type, before its terminator).
    static func elements(_ body: ArraySlice<UInt8>) throws(IdentityDocumentError) -> [String: String] {
        var elements: [String: String] = [:]
        for element in body.split(separator: lf, omittingEmptySubsequences: false) {
            // An identifier is named in an error only when it is one (never the document's data).
            guard element.count >= 4 else { throw IdentityDocumentError(.field, field: elementID(element)) }
            guard let id = elementID(element), id.utf8.first == UInt8(ascii: "D") else { throw IdentityDocumentError(.field) }
            let s = element.startIndex
            guard element[(s + 3)...].allSatisfy({ (0x20...0x7E).contains($0) }) else { throw IdentityDocumentError(.characterSet, field: id) }
            guard elements[id] == nil else { throw IdentityDocumentError(.duplicateElement, field: id) }
            elements[id] = String(decoding: element[(s + 3)...], as: UTF8.self)
        }
        return elements
    }

    /// The element's identifier, when it is three upper-case letters (so that it may be named
    /// in an error without echoing the document's data).
    static func elementID(_ element: ArraySlice<UInt8>) -> String? {
        let id = element.prefix(3)
        guard id.count == 3, id.allSatisfy({ (0x41...0x5A).contains($0) }) else { return nil }
        return String(decoding: id, as: UTF8.self)
    }

    static func trimmed(_ value: String) -> String {
        var bytes = Array(value.utf8)
        while bytes.last == 0x20 { bytes.removeLast() }
        while bytes.first == 0x20 { bytes.removeFirst() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// D.12.5.1: `MMDDCCYY` (US) or `CCYYMMDD` (Canada), eight digits, a day of the calendar.
    static func date(_ value: String, canadian: Bool, element: String) throws(IdentityDocumentError) -> CalendarDate {
        let b = Array(value.utf8)
        guard b.count == 8, b.allSatisfy({ (0x30...0x39).contains($0) }) else { throw IdentityDocumentError(.date, field: element) }
        let n = { (r: Range<Int>) in CalendarDate.number(b[r]) ?? 0 }
        let date = canadian ? CalendarDate(year: n(0..<4), month: n(4..<6), day: n(6..<8)) : CalendarDate(year: n(4..<8), month: n(0..<2), day: n(2..<4))
        guard let date else { throw IdentityDocumentError(.date, field: element) }
        return date
    }
}
