import Foundation
import Testing

@testable import Platform

/// The FoundationEssentials replacements of `String+Essentials.swift` against the Foundation
/// calls they replace (issue 14): Foundation is the oracle here, in the tests only.
@Suite struct StringEssentialsTests {
    static let samples = [
        "", " ", "plain", "  a b \t", "\t\u{A0}x\u{2003}", "\u{3000}x\u{85}\n", "\r\n\u{2028}y\u{2029}\u{B}\u{C}", "\u{200B}z\u{200B}",
        "Ünïcödé Ｆｕｌｌ ｗｉｄｔｈ", "ÉLODIE-Ñoño  ǖ", "cafe\u{301}", "café", "ﬁ ligature", "ß Straße", "ǅ ǈ", "Ḗ", "Αθήνα", "Ĳsselmeer",
        "a%20b%E2%82%AC", "%zz", "%E2%82", "%", "%4", "+%2B", "%C3%A9t%C3%A9", "%FF", "x/y?z#w&v=u",
    ]

    @Test(arguments: samples)
    func trimmingMatchesFoundation(_ s: String) {
        #expect(s.trimmingWhitespace() == s.trimmingCharacters(in: .whitespaces))
        #expect(s.trimmingWhitespaceAndNewlines() == s.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(s.dropFirst().trimmingWhitespace() == s.dropFirst().trimmingCharacters(in: .whitespaces))
    }

    @Test(arguments: samples)
    func nfcMatchesFoundation(_ s: String) {
        #expect(TextFolding.isNFC(s) == s.utf8.elementsEqual(s.precomposedStringWithCanonicalMapping.utf8))
    }

    @Test(arguments: samples)
    func foldingMatchesFoundation(_ s: String) {
        #expect(TextFolding.folded(s) == s.folding(options: [.diacriticInsensitive, .caseInsensitive, .widthInsensitive], locale: nil))
    }

    @Test(arguments: samples)
    func percentEncodingMatchesFoundation(_ s: String) {
        #expect(PercentEncoding.decode(s) == s.removingPercentEncoding)
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        #expect(PercentEncoding.encode(s, allowed: PercentEncoding.isUnreserved) == s.addingPercentEncoding(withAllowedCharacters: unreserved))
        var path = CharacterSet.urlPathAllowed
        path.remove(charactersIn: "/%?#")
        let encoded = PercentEncoding.encode(s) { PercentEncoding.isUnreserved($0) || "!$&'()*+,;=:@".utf8.contains($0) }
        #expect(encoded == s.addingPercentEncoding(withAllowedCharacters: path))
    }

    @Test(arguments: [0.0, 0.004, 0.005, 0.015, 1.234, 2.675, 12.999, 1234.5678, 0.1, -3.14159, 1e9])
    func twoDecimalsMatchesStringFormat(_ value: Double) {
        #expect(NumberText.twoDecimals(value) == String(format: "%.2f", value))
    }

    @Test(arguments: [UInt32(0), 1, 0x1F, 0x7F, 0xFFFF, 0x10000, 0x10FFFF])
    func hex4MatchesStringFormat(_ value: UInt32) {
        #expect(NumberText.hex4(value) == String(format: "%04x", value))
    }
}
