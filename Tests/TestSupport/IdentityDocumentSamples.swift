/// Identity document texts for tests, written independently of the parsers in
/// `Shared/IdentityDocuments`: an AAMVA PDF417 text with its offsets and lengths, and a
/// passport MRZ (TD3) with its ICAO 9303 check digits.
public enum IdentityDocumentSamples {
    /// A US driver's license (AAMVA 2020, version 10) with a jurisdiction subfile; dates
    /// `MMDDCCYY`.
    public static func driverLicense(familyName: String, firstName: String, middleName: String? = nil, number: String, birth: String, expiry: String)
        -> String
    {
        var elements = [
            "DAQ" + number, "DCS" + familyName, "DDEN", "DAC" + firstName, "DDFN", "DAD" + (middleName ?? "NONE"), "DDGN", "DBD01012024", "DBB" + birth,
            "DBA" + expiry, "DBC1", "DAU070 IN", "DAYBRO", "DAG1 MAIN STREET", "DAIRICHMOND", "DAJVA", "DAK232690000  ", "DCF" + number + "X",
            "DCGUSA", "DCK" + number + "Y",
        ]
        elements.append("DDB06062018")
        let body = "DL" + elements.joined(separator: "\n") + "\r"
        let jurisdiction = "ZVZVA01\r"
        func four(_ n: Int) -> String { String(repeating: "0", count: 4 - String(n).count) + String(n) }
        let offset = 21 + 2 * 10
        return "@\n\u{1E}\rANSI 636000100002DL" + four(offset) + four(body.utf8.count) + "ZV" + four(offset + body.utf8.count)
            + four(jurisdiction.utf8.count) + body + jurisdiction
    }

    /// ICAO 9303 Part 3 §4.9 check digit.
    public static func checkDigit(_ text: String) -> String {
        let weights = [7, 3, 1]
        var sum = 0
        for (i, c) in text.unicodeScalars.enumerated() {
            let v: Int
            switch c.value {
            case 0x30...0x39: v = Int(c.value) - 0x30
            case 0x41...0x5A: v = Int(c.value) - 0x41 + 10
            default: v = 0
            }
            sum += v * weights[i % 3]
        }
        return String(sum % 10)
    }

    static func pad(_ text: String, _ width: Int) -> String { text + String(repeating: "<", count: max(0, width - text.count)) }

    /// A passport MRZ (TD3, issuing state UTO): names in upper case A-Z, dates `YYMMDD`.
    public static func passport(surname: String, givenNames: String, number: String, birth: String, expiry: String, sex: String = "F") -> String {
        let line1 = pad("P<UTO" + surname + "<<" + givenNames.split(separator: " ").joined(separator: "<"), 44)
        let n = pad(number, 9)
        let personal = pad("", 14)
        let numberPart = n + checkDigit(n)
        let birthPart = birth + checkDigit(birth)
        let expiryPart = expiry + checkDigit(expiry) + personal + "<"
        let composite = checkDigit(numberPart + birthPart + expiryPart)
        return line1 + "\n" + numberPart + "UTO" + birthPart + sex + expiryPart + composite
    }
}
