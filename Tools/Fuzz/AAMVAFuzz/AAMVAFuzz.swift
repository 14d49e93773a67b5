import FuzzSupport
import IdentityDocuments

/// AAMVA DL/ID PDF417 text (`AAMVADocument.parse`, what a device scans from a driver's license).
///
/// Properties: a refusal is an `IdentityDocumentError` (typed throws); an accepted text starts
/// with the compliance indicator and separators, its fields are its elements (trimmed), its
/// dates are days of the calendar, and it is no longer than the limit.
@main
enum AAMVAFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let document = try? AAMVADocument.parse(String(decoding: bytes, as: UTF8.self)) else { return 0 }
        if bytes.count > AAMVADocument.maximumLength { Fuzz.fail("longer than the limit") }
        if Array(bytes.prefix(9)) != Array("@\n\u{1E}\rANSI ".utf8) { Fuzz.fail("header") }
        for (id, value) in [("DCS", document.familyName), ("DAC", document.firstName), ("DAQ", document.customerID)] {
            guard let element = document.elements[id], element.contains(value), !value.isEmpty else { Fuzz.fail("\(id) is not its element") }
        }
        if !["USA", "CAN"].contains(document.country) || document.elements["DCG"] != document.country { Fuzz.fail("country") }
        for date in [document.birthDate, document.expiryDate] where CalendarDate(iso: date.description) != date { Fuzz.fail("date") }
        return 0
    }
}
