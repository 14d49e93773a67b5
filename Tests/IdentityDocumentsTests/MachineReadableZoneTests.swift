import IdentityDocuments
import Testing

/// ICAO 9303 MRZ: the specimens of Part 4 (the "UTOPIA" passport) and Part 5 (the TD1 card),
/// and a refusal for each check.
@Suite struct MachineReadableZoneTests {
    static let today = CalendarDate(year: 2026, month: 12, day: 2)!

    /// ICAO 9303 Part 4, Appendix A: the specimen passport of Anna Maria Eriksson.
    static let utopia = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"
    /// ICAO 9303 Part 5, Appendix A: the specimen TD1 card.
    static let td1 = "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<"

    @Test func theUtopiaPassport() throws {
        let mrz = try MachineReadableZone.parse(Self.utopia, today: Self.today)
        #expect(mrz.format == .td3)
        #expect(mrz.documentCode == "P")
        #expect(mrz.issuingState == "UTO")
        #expect(mrz.primaryIdentifier == "ERIKSSON")
        #expect(mrz.secondaryIdentifier == "ANNA MARIA")
        #expect(mrz.documentNumber == "L898902C3")
        #expect(mrz.nationality == "UTO")
        #expect(mrz.birthDate == CalendarDate(year: 1974, month: 8, day: 12))
        #expect(mrz.sex == "F")
        #expect(mrz.expiryDate == CalendarDate(year: 2012, month: 4, day: 15))
        #expect(mrz.optionalData == "ZE184226B")
    }

    @Test func theTD1Specimen() throws {
        let mrz = try MachineReadableZone.parse(Self.td1, today: Self.today)
        #expect(mrz.format == .td1)
        #expect(mrz.documentCode == "I")
        #expect(mrz.documentNumber == "D23145890")
        #expect(mrz.birthDate == CalendarDate(year: 1974, month: 8, day: 12))
        #expect(mrz.expiryDate == CalendarDate(year: 2012, month: 4, day: 15))
        #expect(mrz.primaryIdentifier == "ERIKSSON")
        #expect(mrz.secondaryIdentifier == "ANNA MARIA")
        #expect(mrz.optionalData == "")
    }

    @Test func checkDigitsOfPart3() {
        #expect(MachineReadableZone.checkDigit(Array("L898902C3".utf8)) == UInt8(ascii: "6"))
        #expect(MachineReadableZone.checkDigit(Array("740812".utf8)) == UInt8(ascii: "2"))
        #expect(MachineReadableZone.checkDigit(Array("ZE184226B<<<<<".utf8)) == UInt8(ascii: "1"))
    }

    /// `text` with the character at (line, column) replaced.
    static func replacing(_ text: String, line: Int, column: Int, with character: Character) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
        lines[line][column] = character
        return lines.map { String($0) }.joined(separator: "\n")
    }

    static func refusal(_ text: String) -> IdentityDocumentError? {
        do {
            _ = try MachineReadableZone.parse(text, today: today)
            return nil
        } catch { return error }
    }

    @Test(arguments: [
        // TD3: each field's check digit, then the composite.
        (0, 9, "documentNumber"), (0, 19, "birthDate"), (0, 27, "expiryDate"), (0, 42, "optionalData"), (0, 43, "composite"),
    ])
    func aWrongCheckDigitOfTheUtopiaPassport(_ spec: (Int, Int, String)) {
        let (_, column, field) = spec
        let broken = Self.replacing(Self.utopia, line: 1, column: column, with: "5")
        #expect(Self.refusal(broken) == IdentityDocumentError(.checkDigit, field: field))
    }

    @Test(arguments: [(0, 14, "documentNumber"), (1, 6, "birthDate"), (1, 14, "expiryDate"), (1, 29, "composite")])
    func aWrongCheckDigitOfTheTD1Card(_ spec: (Int, Int, String)) {
        let (line, column, field) = spec
        let broken = Self.replacing(Self.td1, line: line, column: column, with: "5")
        #expect(Self.refusal(broken) == IdentityDocumentError(.checkDigit, field: field))
    }

    @Test func aChangedFieldFailsItsCheckDigit() {
        // The document number changed, its check digit and the composite not.
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 1, column: 0, with: "M")) == IdentityDocumentError(.checkDigit, field: "documentNumber"))
        // A filler check digit with a personal number present.
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 1, column: 42, with: "<")) == IdentityDocumentError(.checkDigit, field: "optionalData"))
    }

    @Test func layoutAndCharacterSet() {
        #expect(Self.refusal(Self.utopia + "\n") == IdentityDocumentError(.layout))
        #expect(Self.refusal(Self.utopia.replacingOccurrences("\n", "\r\n")) == IdentityDocumentError(.characterSet))
        #expect(Self.refusal(String(Self.utopia.dropLast())) == IdentityDocumentError(.layout))
        #expect(Self.refusal(Self.utopia.lowercased()) == IdentityDocumentError(.characterSet))
        #expect(Self.refusal("") == IdentityDocumentError(.layout))
        #expect(Self.refusal(String(repeating: "<", count: 93)) == IdentityDocumentError(.tooLong))
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 0, column: 0, with: "I")) == IdentityDocumentError(.field, field: "documentCode"))
        #expect(Self.refusal(Self.replacing(Self.td1, line: 0, column: 0, with: "P")) == IdentityDocumentError(.field, field: "documentCode"))
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 1, column: 20, with: "Q")) == IdentityDocumentError(.field, field: "sex"))
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 0, column: 2, with: "1")) == IdentityDocumentError(.field, field: "issuingState"))
    }

    @Test func names() {
        // A third "<<" part, a name starting with a filler, a doubled component separator.
        #expect(Self.refusal(Self.utopia.replacingOccurrences("ANNA<MARIA", "ANNA<<MARIA").replacingOccurrences("<<<<<<<<<<<<<<<<<<<\n", "<<<<<<<<<<<<<<<<<<\n")) == IdentityDocumentError(.field, field: "name"))
        #expect(Self.refusal(Self.utopia.replacingOccurrences("ANNA<MARIA<<", "ANNA<<<MARIA")) == IdentityDocumentError(.field, field: "name"))
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 0, column: 5, with: "<")) == IdentityDocumentError(.field, field: "name"))
        #expect(Self.refusal(Self.replacing(Self.utopia, line: 0, column: 5, with: "1")) == IdentityDocumentError(.field, field: "name"))
    }

    @Test func datesAndCenturies() throws {
        // A month 13 with a right check digit.
        let line2 = MRZBuilder.td3Line2(number: "L898902C3", nationality: "UTO", birth: "741312", sex: "F", expiry: "340415", personal: "")
        #expect(Self.refusal("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n" + line2) == IdentityDocumentError(.date, field: "birthDate"))
        // 29 February of a year that is not a leap year.
        let notLeap = MRZBuilder.td3Line2(number: "L898902C3", nationality: "UTO", birth: "740812", sex: "F", expiry: "310229", personal: "")
        #expect(Self.refusal("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n" + notLeap) == IdentityDocumentError(.date, field: "expiryDate"))
        // Born "25": 2025 before today, "27": 1927.
        let young = MRZBuilder.td3Line2(number: "X1", nationality: "UTO", birth: "250101", sex: "<", expiry: "350101", personal: "")
        let mrz = try MachineReadableZone.parse("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n" + young, today: Self.today)
        #expect(mrz.birthDate == CalendarDate(year: 2025, month: 1, day: 1))
        #expect(mrz.expiryDate == CalendarDate(year: 2035, month: 1, day: 1))
        #expect(mrz.sex == "X")
        #expect(mrz.documentNumber == "X1")
        #expect(mrz.optionalData == "")
        let old = MRZBuilder.td3Line2(number: "X1", nationality: "UTO", birth: "270101", sex: "M", expiry: "350101", personal: "")
        #expect(try MachineReadableZone.parse("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n" + old, today: Self.today).birthDate.year == 1927)
    }

    @Test func aLongTD1DocumentNumberIsNotRead() {
        #expect(Self.refusal(Self.replacing(Self.td1, line: 0, column: 14, with: "<")) == IdentityDocumentError(.unsupported, field: "documentNumber"))
    }

    @Test func theBuilderMakesWhatTheParserReads() throws {
        let text = MRZBuilder.passport(surname: "DOE", given: "JANE", number: "C01X00T47", birth: "900102", expiry: "340101")
        let mrz = try MachineReadableZone.parse(text, today: Self.today)
        #expect(mrz.primaryIdentifier == "DOE" && mrz.secondaryIdentifier == "JANE" && mrz.documentNumber == "C01X00T47")
    }
}

/// Writes MRZ text with right check digits (for tests).
enum MRZBuilder {
    static func pad(_ text: String, _ width: Int) -> String { text + String(repeating: "<", count: max(0, width - text.count)) }
    static func check(_ text: String) -> String { String(UnicodeScalar(MachineReadableZone.checkDigit(Array(text.utf8)))) }

    static func td3Line2(number: String, nationality: String, birth: String, sex: String, expiry: String, personal: String) -> String {
        let n = pad(number, 9)
        let p = pad(personal, 14)
        let pc = personal.isEmpty ? "<" : check(p)
        let body = n + check(n) + pad(nationality, 3) + birth + check(birth) + sex + expiry + check(expiry) + p + pc
        let composite = (n + check(n)) + (birth + check(birth)) + (expiry + check(expiry) + p + pc)
        return body + check(composite)
    }

    static func passport(surname: String, given: String, number: String, birth: String, expiry: String) -> String {
        pad("P<UTO" + surname + "<<" + given.replacingOccurrences(" ", "<"), 44) + "\n"
            + td3Line2(number: number, nationality: "UTO", birth: birth, sex: "F", expiry: expiry, personal: "")
    }
}

extension String {
    /// Foundation-free replacement for the tests.
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
