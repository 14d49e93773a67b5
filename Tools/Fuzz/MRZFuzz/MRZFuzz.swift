import FuzzSupport
import IdentityDocuments

/// ICAO 9303 machine readable zones (`MachineReadableZone.parse`, the text a device submits
/// for a passport or an identity card).
///
/// Properties: a refusal is an `IdentityDocumentError` (typed throws); an accepted zone has the
/// layout of its format (2 × 44 or 3 × 30, LF-separated), its dates are days of the calendar, its
/// document number a prefix of the text's number field, and its check digits right: recomputing
/// the document number's digit from the text gives the one printed.
@main
enum MRZFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let today = CalendarDate(year: 2026, month: 1, day: 1)!

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        let text = String(decoding: bytes, as: UTF8.self)
        guard let mrz = try? MachineReadableZone.parse(text, today: today) else { return 0 }
        let lines = Array(text.utf8).split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        switch mrz.format {
        case .td3:
            guard lines.count == 2, lines.allSatisfy({ $0.count == 44 }) else { Fuzz.fail("TD3 layout") }
            if MachineReadableZone.checkDigit(lines[1][0..<9]) != lines[1][9] { Fuzz.fail("TD3 number check digit") }
            if !String(decoding: lines[1][0..<9], as: UTF8.self).hasPrefix(mrz.documentNumber) { Fuzz.fail("TD3 number") }
        case .td1:
            guard lines.count == 3, lines.allSatisfy({ $0.count == 30 }) else { Fuzz.fail("TD1 layout") }
            if MachineReadableZone.checkDigit(lines[0][5..<14]) != lines[0][14] { Fuzz.fail("TD1 number check digit") }
            if !String(decoding: lines[0][5..<14], as: UTF8.self).hasPrefix(mrz.documentNumber) { Fuzz.fail("TD1 number") }
        }
        for date in [mrz.birthDate, mrz.expiryDate] where CalendarDate(iso: date.description) != date { Fuzz.fail("date") }
        if mrz.birthDate > today { Fuzz.fail("birth date after today") }
        if mrz.primaryIdentifier.isEmpty { Fuzz.fail("empty primary identifier") }
        return 0
    }
}
