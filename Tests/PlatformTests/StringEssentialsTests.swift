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

    @Test func millisecondsOfADuration() {
        #expect(NumberText.milliseconds(.zero) == "0.00")
        #expect(NumberText.milliseconds(.microseconds(4)) == "0.00")
        #expect(NumberText.milliseconds(.microseconds(5)) == "0.01")
        #expect(NumberText.milliseconds(.microseconds(2_024)) == "2.02")
        #expect(NumberText.milliseconds(.microseconds(2_025)) == "2.03")
        #expect(NumberText.milliseconds(.milliseconds(1_500)) == "1500.00")
        #expect(NumberText.milliseconds(.seconds(3) + .microseconds(999_995)) == "4000.00")
        #expect(NumberText.milliseconds(.milliseconds(-3)) == "0.00")
        // Against the C formatter over durations that are exact in a Double (whole microseconds
        // with no half-way rounding), the way the access log formatted them before.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let micros = Int64.random(in: 0..<100_000_000, using: &generator)
            guard micros % 10 != 5 else { continue }
            #expect(NumberText.milliseconds(.microseconds(micros)) == String(format: "%.2f", Double(micros) / 1000), "\(micros)")
        }
    }
}
