import Foundation
import Schema
import Testing

@Suite struct UsernameRulesTests {
    /// The rule as it was written with Foundation (CharacterSet trimming, general categories).
    static func reference(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= UsernameRules.maximumLength && !s.unicodeScalars.contains { $0.properties.generalCategory == .control }
            && s == s.trimmingCharacters(in: .whitespaces) && s.utf8.elementsEqual(s.precomposedStringWithCanonicalMapping.utf8)
    }

    /// Canonically equivalent spellings that `String ==` calls equal: only the NFC one is a
    /// username, and no two valid usernames are `==` without being the same bytes.
    @Test(arguments: [
        ("jos\u{E9}", "jose\u{301}"), ("Kate", "\u{212A}ate"), ("\u{C5}", "\u{212B}"), ("a;", "a\u{37E}"), ("\u{1E69}", "s\u{323}\u{307}"),
    ])
    func canonicalEquivalentsAreRefused(nfc: String, other: String) {
        #expect(nfc == other)  // Swift's String equality: canonical equivalence
        #expect(UsernameRules.isValid(nfc))
        #expect(!UsernameRules.isValid(other))
        #expect(!UsernameRules.identical(nfc, other))
        #expect(UsernameRules.identical(nfc, String(decoding: Array(nfc.utf8), as: UTF8.self)))
    }

    /// Case and width variants are valid and other usernames.
    @Test(arguments: [("Kate", "kate"), ("Kate", "KATE"), ("Kate", "\u{FF2B}ate"), ("alice", "\u{FF41}lice"), ("STRASSE", "stra\u{DF}e")])
    func caseAndWidthVariantsAreDistinct(a: String, b: String) {
        #expect(UsernameRules.isValid(a) && UsernameRules.isValid(b))
        #expect(!UsernameRules.identical(a, b))
        #expect(a != b)
    }

    @Test func agreesWithTheFoundationFormulation() {
        let pieces: [String] = [
            "a", "alice", "Ä", "é", "e\u{301}", "😀", "李", " ", "\u{00A0}", "\u{3000}", "\u{2028}", "\u{2029}", "\u{200B}", "\t", "\n",
            "\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}", "\u{A0}", "\u{FEFF}", "\u{301}", "@", ".", "-", "\u{1680}", "\u{205F}", "\u{85}",
        ]
        var generator = SystemRandomNumberGenerator()
        var checked = 0
        // Every piece alone, every pair, and random strings of up to six pieces.
        var candidates = pieces + pieces.flatMap { a in pieces.map { a + $0 } }
        for _ in 0..<20_000 {
            candidates.append((0..<Int.random(in: 1...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined())
        }
        candidates += [String(repeating: "a", count: 256), String(repeating: "a", count: 257), String(repeating: "é", count: 128), String(repeating: "é", count: 129), ""]
        for s in candidates {
            #expect(UsernameRules.isValid(s) == Self.reference(s), "\(Array(s.unicodeScalars.map(\.value)))")
            checked += 1
        }
        #expect(checked > 20_000)
    }
}
