/// The machine readable zone of an ICAO 9303 travel document: a passport (TD3, Part 4: two
/// lines of 44 characters) or an identity card (TD1, Part 5: three lines of 30), as the
/// device's scanner reads it (lines separated by LF, nothing before or after).
///
/// Every check digit is verified (Part 3 §4.9, weights 7-3-1): the document number, the birth
/// date, the expiry date, the optional data (TD3's personal number; `<` only when it is all
/// fillers) and the composite. Characters are the MRZ set (`A`-`Z`, `0`-`9`, `<`) in every
/// field's own subset; dates are days of the calendar.
///
/// Centuries (the MRZ prints `YYMMDD`): an expiry date is in 2000-2099 (no valid document
/// expired before 2000); a birth date is the latest of 19YY and 20YY that is not after `today`.
public struct MachineReadableZone: Sendable, Hashable {
    public enum Format: String, Sendable, Hashable {
        /// A passport: 2 × 44 (ICAO 9303 Part 4).
        case td3 = "TD3"
        /// An identity card: 3 × 30 (ICAO 9303 Part 5).
        case td1 = "TD1"
    }

    public let format: Format
    /// `P`, `PN`, `I`, `ID`, `AC`, … (fillers removed).
    public let documentCode: String
    /// ICAO 9303 Part 3 three-letter code of the issuing state or organisation (fillers removed).
    public let issuingState: String
    /// The primary identifier (family name), components separated by a space.
    public let primaryIdentifier: String
    /// The secondary identifier (given names), components separated by a space; empty when the
    /// document has none.
    public let secondaryIdentifier: String
    /// Fillers removed.
    public let documentNumber: String
    public let nationality: String
    public let birthDate: CalendarDate
    /// `F`, `M`, or `X` (the MRZ's `<`: unspecified).
    public let sex: String
    public let expiryDate: CalendarDate
    /// TD3's personal number; TD1's two optional data fields joined by a space when both are
    /// present. Fillers removed.
    public let optionalData: String

    /// The longest text accepted (three lines of 30 or two of 44, with their separators).
    public static let maximumLength = 92

    /// Parses and checks MRZ text.
    ///
    /// - Parameters:
    ///   - text: the lines, separated by one LF, without a trailing one.
    ///   - today: the date that decides a birth date's century.
    /// - Throws: ``IdentityDocumentError`` naming the check that failed.
    public static func parse(_ text: String, today: CalendarDate) throws(IdentityDocumentError) -> MachineReadableZone {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumLength else { throw IdentityDocumentError(.tooLong) }
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        for line in lines {
            for byte in line where !isMRZ(byte) { throw IdentityDocumentError(.characterSet) }
        }
        switch (lines.count, lines.first?.count) {
        case (2, 44) where lines[1].count == 44: return try td3(lines[0], lines[1], today: today)
        case (3, 30) where lines[1].count == 30 && lines[2].count == 30: return try td1(lines[0], lines[1], lines[2], today: today)
        default: throw IdentityDocumentError(.layout)
        }
    }

    // MARK: - Formats

    /// ICAO 9303 Part 4 §4.2.2: line 1 document code, issuing state, name; line 2 document
    /// number, nationality, birth date, sex, expiry, personal number, with their check digits
    /// and the composite over positions 1-10, 14-20 and 22-43.
    static func td3(_ l1: [UInt8], _ l2: [UInt8], today: CalendarDate) throws(IdentityDocumentError) -> MachineReadableZone {
        guard l1[0] == UInt8(ascii: "P") else { throw IdentityDocumentError(.field, field: "documentCode") }
        let code = try documentCode(l1[0..<2])
        let state = try stateCode(l1[2..<5], field: "issuingState")
        let (primary, secondary) = try names(l1[5..<44])
        let number = try documentNumber(l2[0..<9], check: l2[9])
        let nationality = try stateCode(l2[10..<13], field: "nationality")
        let birth = try date(l2[13..<19], check: l2[19], field: "birthDate")
        let sex = try sex(l2[20])
        let expiry = try date(l2[21..<27], check: l2[27], field: "expiryDate")
        let personal = l2[28..<42]
        try alphanumericField(personal, field: "optionalData")
        if l2[42] == filler {
            // A personal number of fillers only may have a filler as its check digit.
            guard personal.allSatisfy({ $0 == filler }) else { throw IdentityDocumentError(.checkDigit, field: "optionalData") }
        } else {
            try verify(personal, check: l2[42], field: "optionalData")
        }
        try verify(Array(l2[0..<10]) + Array(l2[13..<20]) + Array(l2[21..<43]), check: l2[43], field: "composite")
        return MachineReadableZone(
            format: .td3, documentCode: code, issuingState: state, primaryIdentifier: primary, secondaryIdentifier: secondary,
            documentNumber: number, nationality: nationality, birthDate: try birthDate(birth, today: today), sex: sex,
            expiryDate: try expiryDate(expiry), optionalData: stripFillers(personal))
    }

    /// ICAO 9303 Part 5 §4.2.2: line 1 document code, issuing state, document number, optional
    /// data; line 2 birth date, sex, expiry, nationality, optional data, composite (over line 1
    /// positions 6-30 and line 2 positions 1-7, 9-15, 19-29); line 3 the name.
    static func td1(_ l1: [UInt8], _ l2: [UInt8], _ l3: [UInt8], today: CalendarDate) throws(IdentityDocumentError) -> MachineReadableZone {
        guard [UInt8(ascii: "I"), UInt8(ascii: "A"), UInt8(ascii: "C")].contains(l1[0]) else {
            throw IdentityDocumentError(.field, field: "documentCode")
        }
        let code = try documentCode(l1[0..<2])
        let state = try stateCode(l1[2..<5], field: "issuingState")
        // A filler as the number's check digit says the number continues in the optional data
        // (Part 5 §4.2.4 note j): not read here.
        guard l1[14] != filler else { throw IdentityDocumentError(.unsupported, field: "documentNumber") }
        let number = try documentNumber(l1[5..<14], check: l1[14])
        let optional1 = l1[15..<30]
        try alphanumericField(optional1, field: "optionalData")
        let birth = try date(l2[0..<6], check: l2[6], field: "birthDate")
        let sex = try sex(l2[7])
        let expiry = try date(l2[8..<14], check: l2[14], field: "expiryDate")
        let nationality = try stateCode(l2[15..<18], field: "nationality")
        let optional2 = l2[18..<29]
        try alphanumericField(optional2, field: "optionalData")
        try verify(Array(l1[5..<30]) + Array(l2[0..<7]) + Array(l2[8..<15]) + Array(l2[18..<29]), check: l2[29], field: "composite")
        let (primary, secondary) = try names(l3[0..<30])
        let optional = [stripFillers(optional1), stripFillers(optional2)].filter { !$0.isEmpty }.joined(separator: " ")
        return MachineReadableZone(
            format: .td1, documentCode: code, issuingState: state, primaryIdentifier: primary, secondaryIdentifier: secondary,
            documentNumber: number, nationality: nationality, birthDate: try birthDate(birth, today: today), sex: sex,
            expiryDate: try expiryDate(expiry), optionalData: optional)
    }

    // MARK: - Fields

    static let filler = UInt8(ascii: "<")

    static func isMRZ(_ byte: UInt8) -> Bool { isLetter(byte) || isDigit(byte) || byte == filler }
    static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) }
    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// ICAO 9303 Part 3 §4.9: digits are their value, `A`-`Z` 10-35, `<` 0; weights 7, 3, 1
    /// repeated; the sum modulo 10.
    public static func checkDigit<S: Sequence>(_ field: S) -> UInt8 where S.Element == UInt8 {
        var sum = 0
        for (i, byte) in field.enumerated() {
            let value: Int =
                if isDigit(byte) { Int(byte - 0x30) } else if isLetter(byte) { Int(byte - 0x41) + 10 } else { 0 }
            sum += value * [7, 3, 1][i % 3]
        }
        return UInt8(0x30 + sum % 10)
    }

    static func verify<S: Sequence>(_ field: S, check: UInt8, field name: String) throws(IdentityDocumentError) where S.Element == UInt8 {
        guard isDigit(check) else { throw IdentityDocumentError(.characterSet, field: name) }
        guard checkDigit(field) == check else { throw IdentityDocumentError(.checkDigit, field: name) }
    }

    static func stripFillers(_ field: ArraySlice<UInt8>) -> String {
        var end = field.endIndex
        while end > field.startIndex, field[end - 1] == filler { end -= 1 }
        return String(decoding: field[field.startIndex..<end], as: UTF8.self)
    }

    /// Letters and digits, then fillers only (a filler never inside the value).
    static func alphanumericField(_ field: ArraySlice<UInt8>, field name: String) throws(IdentityDocumentError) {
        let value = stripFillers(field).utf8
        guard value.allSatisfy({ isLetter($0) || isDigit($0) }) else { throw IdentityDocumentError(.field, field: name) }
    }

    /// Two characters: a letter, then a letter or a filler.
    static func documentCode(_ field: ArraySlice<UInt8>) throws(IdentityDocumentError) -> String {
        let second = field[field.startIndex + 1]
        guard isLetter(field[field.startIndex]), isLetter(second) || second == filler else {
            throw IdentityDocumentError(.field, field: "documentCode")
        }
        return stripFillers(field)
    }

    /// A three-letter code, or a shorter one padded with fillers (`D<<`).
    static func stateCode(_ field: ArraySlice<UInt8>, field name: String) throws(IdentityDocumentError) -> String {
        let value = stripFillers(field)
        guard !value.isEmpty, value.utf8.allSatisfy(isLetter) else { throw IdentityDocumentError(.field, field: name) }
        return value
    }

    static func documentNumber(_ field: ArraySlice<UInt8>, check: UInt8) throws(IdentityDocumentError) -> String {
        try alphanumericField(field, field: "documentNumber")
        let value = stripFillers(field)
        guard !value.isEmpty else { throw IdentityDocumentError(.field, field: "documentNumber") }
        try verify(field, check: check, field: "documentNumber")
        return value
    }

    static func sex(_ byte: UInt8) throws(IdentityDocumentError) -> String {
        switch byte {
        case UInt8(ascii: "F"): "F"
        case UInt8(ascii: "M"): "M"
        case UInt8(ascii: "X"), filler: "X"
        default: throw IdentityDocumentError(.field, field: "sex")
        }
    }

    /// `YYMMDD` digits with their check digit; the month and day checked once the century is
    /// known.
    static func date(_ field: ArraySlice<UInt8>, check: UInt8, field name: String) throws(IdentityDocumentError) -> (yy: Int, mm: Int, dd: Int, field: String) {
        guard field.allSatisfy(isDigit) else { throw IdentityDocumentError(.date, field: name) }
        try verify(field, check: check, field: name)
        let s = field.startIndex
        guard let yy = CalendarDate.number(field[s..<s + 2]), let mm = CalendarDate.number(field[s + 2..<s + 4]),
            let dd = CalendarDate.number(field[s + 4..<s + 6])
        else { throw IdentityDocumentError(.date, field: name) }
        return (yy, mm, dd, name)
    }

    static func birthDate(_ d: (yy: Int, mm: Int, dd: Int, field: String), today: CalendarDate) throws(IdentityDocumentError) -> CalendarDate {
        if let recent = CalendarDate(year: 2000 + d.yy, month: d.mm, day: d.dd), recent <= today { return recent }
        guard let date = CalendarDate(year: 1900 + d.yy, month: d.mm, day: d.dd) else { throw IdentityDocumentError(.date, field: d.field) }
        return date
    }

    static func expiryDate(_ d: (yy: Int, mm: Int, dd: Int, field: String)) throws(IdentityDocumentError) -> CalendarDate {
        guard let date = CalendarDate(year: 2000 + d.yy, month: d.mm, day: d.dd) else { throw IdentityDocumentError(.date, field: d.field) }
        return date
    }

    /// ICAO 9303 Part 3 §4.6: the primary identifier, `<<`, the secondary identifier; within
    /// each, components separated by one `<`; fillers to the end. Letters only.
    static func names(_ field: ArraySlice<UInt8>) throws(IdentityDocumentError) -> (String, String) {
        let value = Array(stripFillers(field).utf8)
        guard let first = value.first, isLetter(first), value.allSatisfy({ isLetter($0) || $0 == filler }) else {
            throw IdentityDocumentError(.field, field: "name")
        }
        var parts: [[UInt8]] = [[]]
        var i = 0
        while i < value.count {
            if value[i] == filler, i + 1 < value.count, value[i + 1] == filler {
                parts.append([])
                i += 2
            } else {
                parts[parts.count - 1].append(value[i])
                i += 1
            }
        }
        guard parts.count <= 2 else { throw IdentityDocumentError(.field, field: "name") }
        func words(_ part: [UInt8]) throws(IdentityDocumentError) -> String {
            // A component separator at either end or doubled (`<<<`) is malformed.
            guard part.first != filler, part.last != filler else { throw IdentityDocumentError(.field, field: "name") }
            return String(decoding: part.map { $0 == filler ? 0x20 : $0 }, as: UTF8.self)
        }
        let primary = try words(parts[0])
        let secondary = parts.count == 2 ? try words(parts[1]) : ""
        if parts.count == 2, secondary.isEmpty { throw IdentityDocumentError(.field, field: "name") }
        return (primary, secondary)
    }
}
