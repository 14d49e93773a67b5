import IdentityDocuments
import TestRandom
import Testing

/// AAMVA DL/ID PDF417 text: the example of the 2020 standard's Annex D, a Canadian card, and a
/// refusal for each check of the header, the subfiles and the elements.
@Suite struct AAMVADocumentTests {
    /// AAMVA DL/ID Card Design Standard (2020), Annex D, the example bar code's text.
    static let annexD =
        "@\n\u{1E}\rANSI 636000100102DL00410278ZV03190008DLDAQT64235789\nDCSSAMPLE\nDDEN\nDACMICHAEL\nDDFN\nDADJOHN\nDDGN\nDCUJR\nDCAD\nDCBK\nDCDPH\n"
        + "DBD06062019\nDBB06061986\nDBA12102024\nDBC1\nDAU068 in\nDAYBRO\nDAG2300 WEST BROAD STREET\nDAIRICHMOND\nDAJVA\nDAK232690000  \n"
        + "DCF2424244747474786102204\nDCGUSA\nDCK123456789\nDDAF\nDDB06062018\nDDC06062020\nDDD1\rZVZVA01\r"

    static func refusal(_ text: String) -> IdentityDocumentError? {
        do {
            _ = try AAMVADocument.parse(text)
            return nil
        } catch { return error }
    }

    @Test func theAnnexDExample() throws {
        let document = try AAMVADocument.parse(Self.annexD)
        #expect(document.issuerIdentificationNumber == "636000")
        #expect(document.aamvaVersion == 10)
        #expect(document.jurisdictionVersion == 1)
        #expect(document.kind == .driverLicense)
        #expect(document.customerID == "T64235789")
        #expect(document.familyName == "SAMPLE")
        #expect(document.firstName == "MICHAEL")
        #expect(document.middleName == "JOHN")
        #expect(document.birthDate == CalendarDate(year: 1986, month: 6, day: 6))
        #expect(document.expiryDate == CalendarDate(year: 2024, month: 12, day: 10))
        #expect(document.country == "USA")
        #expect(document.jurisdiction == "VA")
        // Optional elements are kept unread, fixed-length padding included.
        #expect(document.elements["DAK"] == "232690000  ")
        #expect(document.elements.count == 28)
    }

    @Test func aCanadianCardHasItsDatesYearFirst() throws {
        let text = AAMVABuilder.file(
            kind: "ID", elements: ["DAQ": "A1234", "DCS": "TREMBLAY", "DAC": "ELODIE", "DAD": "NONE", "DBB": "19900228", "DBA": "20310101", "DCG": "CAN"], version: "09")
        let document = try AAMVADocument.parse(text)
        #expect(document.kind == .identificationCard)
        #expect(document.aamvaVersion == 9)
        #expect(document.middleName == nil)
        #expect(document.birthDate == CalendarDate(year: 1990, month: 2, day: 28))
        #expect(document.expiryDate == CalendarDate(year: 2031, month: 1, day: 1))
        // The US order read as Canadian: month 90.
        #expect(Self.refusal(text.replacingOccurrences("DCGCAN", "DCGUSA")) == IdentityDocumentError(.date, field: "DBB"))
    }

    @Test func theHeader() {
        #expect(Self.refusal(Self.annexD.replacingOccurrences("@\n", "#\n")) == IdentityDocumentError(.header))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("@\n\u{1E}\r", "@\r\u{1E}\n")) == IdentityDocumentError(.header))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("\u{1E}", "\u{1D}")) == IdentityDocumentError(.header))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("ANSI ", "AAMVA")) == IdentityDocumentError(.header))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("636000100102", "63600A100102")) == IdentityDocumentError(.header))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("636000100102", "636000070102")) == IdentityDocumentError(.version))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("636000100102", "636000100100")) == IdentityDocumentError(.header))
        #expect(Self.refusal("@\n\u{1E}\rANSI 6360") == IdentityDocumentError(.header))
        #expect(Self.refusal(String(repeating: "A", count: 2049)) == IdentityDocumentError(.tooLong))
    }

    @Test func offsetsAndLengths() {
        // The DL subfile one byte later, one byte shorter, longer than the file.
        #expect(Self.refusal(Self.annexD.replacingOccurrences("DL00410278", "DL00420278")) == IdentityDocumentError(.subfile))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("DL00410278", "DL00410277")) == IdentityDocumentError(.subfile))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("ZV03190008", "ZV03190009")) == IdentityDocumentError(.subfile))
        // Three entries declared, two designators.
        #expect(Self.refusal(Self.annexD.replacingOccurrences("636000100102", "636000100103")) == IdentityDocumentError(.subfile))
        // A subfile whose type is not its designator's; an unknown type; two DL subfiles.
        #expect(Self.refusal(Self.annexD.replacingOccurrences("ZVZVA01", "ZWZVA01")) == IdentityDocumentError(.subfile))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("ZVZVA01", "EVZVA01").replacingOccurrences("ZV0319", "EV0319")) == IdentityDocumentError(.subfile))
        #expect(Self.refusal(Self.annexD.replacingOccurrences("ZVZVA01", "DLZVA01").replacingOccurrences("ZV0319", "DL0319")) == IdentityDocumentError(.subfile))
        // The DL subfile without its segment terminator.
        #expect(Self.refusal(Self.annexD.replacingOccurrences("DDD1\r", "DDD1\n")) == IdentityDocumentError(.subfile))
        // No DL or ID subfile.
        #expect(Self.refusal("@\n\u{1E}\rANSI 636000100101ZV00310008ZVZVA01\r") == IdentityDocumentError(.subfile))
    }

    @Test func nothingAfterTheLastSubfile() {
        #expect(Self.refusal(Self.annexD + "X") == IdentityDocumentError(.trailingData))
        #expect(Self.refusal(Self.annexD + "\n") == IdentityDocumentError(.trailingData))
    }

    @Test func elements() throws {
        let valid: [String: String] = ["DAQ": "T1", "DCS": "DOE", "DAC": "JANE", "DBB": "01021990", "DBA": "01022031", "DCG": "USA"]
        #expect(throws: Never.self) { try AAMVADocument.parse(AAMVABuilder.file(elements: valid)) }
        for id in ["DAQ", "DCS", "DAC", "DBB", "DBA", "DCG"] {
            var missing = valid
            missing[id] = nil
            #expect(Self.refusal(AAMVABuilder.file(elements: missing)) == IdentityDocumentError(.missingElement, field: id))
        }
        // An element of the standard this parser does not read is kept; a jurisdiction's
        // element outside its Z subfile, an empty element, a repeated one are refused.
        #expect(try AAMVADocument.parse(AAMVABuilder.file(elements: valid.merging(["DZZ": "X"]) { $1 })).elements["DZZ"] == "X")
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["ZVA": "1"]) { $1 })) == IdentityDocumentError(.field))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid, extra: "\nDCSDOE")) == IdentityDocumentError(.duplicateElement, field: "DCS"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid, extra: "\n")) == IdentityDocumentError(.field))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid, extra: "\nDCT")) == IdentityDocumentError(.field, field: "DCT"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["DCS": "D\u{7}E"]) { $1 })) == IdentityDocumentError(.characterSet, field: "DCS"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["DCS": "   "]) { $1 })) == IdentityDocumentError(.field, field: "DCS"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["DCG": "MEX"]) { $1 })) == IdentityDocumentError(.field, field: "DCG"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["DBA": "02302031"]) { $1 })) == IdentityDocumentError(.date, field: "DBA"))
        #expect(Self.refusal(AAMVABuilder.file(elements: valid.merging(["DBB": "1990-1-2"]) { $1 })) == IdentityDocumentError(.date, field: "DBB"))
    }

    /// Mutated texts: every outcome is a document or an ``IdentityDocumentError`` (typed
    /// throws), and what parses keeps its subfile's elements.
    @Test func mutations() {
        var g = SplitMix64(seed: 0x16_AA)
        let seed = Array(Self.annexD.utf8)
        var accepted = 0
        for _ in 0..<3000 {
            var b = seed
            for _ in 0..<Int.random(in: 1...3, using: &g) {
                let i = Int.random(in: 0..<b.count, using: &g)
                switch Int.random(in: 0..<3, using: &g) {
                case 0: b[i] = [0x0A, 0x0D, 0x1E, 0x30, 0x39, 0x41, 0x44, 0x5A, 0x20, 0xFF].randomElement(using: &g)!
                case 1: b.remove(at: i)
                default: b.insert(UInt8.random(in: 0...127, using: &g), at: i)
                }
                if b.isEmpty { b = [0x40] }
            }
            if let document = try? AAMVADocument.parse(String(decoding: b, as: UTF8.self)) {
                accepted += 1
                #expect(document.elements["DCS"]?.hasPrefix(document.familyName) == true)
            }
        }
        // Most single-byte changes break an offset, a length or a terminator.
        #expect(accepted < 3000)
    }
}

/// Writes AAMVA text with right offsets and lengths (for tests).
enum AAMVABuilder {
    static func file(kind: String = "DL", elements: [String: String], extra: String = "", version: String = "10") -> String {
        let body = kind + elements.sorted { $0.key < $1.key }.map { $0.key + $0.value }.joined(separator: "\n") + extra + "\r"
        let jurisdiction = "ZVZVA01\r"
        let offset = 21 + 20
        func four(_ n: Int) -> String { String(repeating: "0", count: 4 - String(n).count) + String(n) }
        return "@\n\u{1E}\rANSI 636000\(version)0002" + kind + four(offset) + four(body.utf8.count) + "ZV" + four(offset + body.utf8.count)
            + four(jurisdiction.utf8.count) + body + jurisdiction
    }
}
