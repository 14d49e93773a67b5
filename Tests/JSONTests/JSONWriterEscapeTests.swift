import Foundation
import JSON
import Testing

/// The writer's string escaping (one pass over the string's UTF-8, unescaped runs copied whole):
/// exact bytes for each kind of escape, and every string a strict reader reads back unchanged.
@Suite struct JSONWriterEscapeTests {
    static func written(_ s: String) -> String {
        var w = JSONWriter()
        w.writeString(s)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    @Test func escapesAreExact() {
        #expect(Self.written("") == #""""#)
        #expect(Self.written("plain/é𝄞") == #""plain/é𝄞""#)
        #expect(Self.written("\"") == #""\"""#)
        #expect(Self.written("a\\b") == #""a\\b""#)
        #expect(Self.written("\n\r\t\u{08}\u{0C}") == #""\n\r\t\b\f""#)
        #expect(Self.written("x\u{00}y\u{1F}") == #""x\u0000y\u001f""#)
        #expect(Self.written("head\"mid\\tail") == #""head\"mid\\tail""#)
        #expect(Self.written("\u{7F}") == "\"\u{7F}\"")
    }

    /// Every control character, alone and between runs, and strings of each length up to 40
    /// with an escape at every position: parsed back (JSONParser, then Foundation) unchanged.
    @Test func everyStringReadsBack() throws {
        var samples: [String] = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        samples += (0..<0x20).map { "ab\(String(UnicodeScalar(UInt8($0))))cd" }
        for n in 0..<40 {
            for k in 0...n {
                var chars = Array(repeating: Character("z"), count: n)
                if k < n { chars[k] = ["\"", "\\", "\n", "\u{01}", "é"][(n + k) % 5] }
                samples.append(String(chars))
            }
        }
        for s in samples {
            let json = "[" + Self.written(s) + "]"
            let parsed = try JSONParser.parse(Array(json.utf8), maximumDepth: 4)
            #expect(parsed == .array([.string(s)]), "\(json.debugDescription)")
            let foundation = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
            #expect(foundation == [s], "\(json.debugDescription)")
        }
    }
}

/// `writeDate` (civil date computed for 1900-9999, the formatter elsewhere) writes exactly what
/// `Date.ISO8601FormatStyle()` writes, which the generic encoder uses.
@Suite struct JSONWriterDateTests {
    static func written(_ t: Double) -> String {
        var w = JSONWriter()
        w.writeDate(Date(timeIntervalSince1970: t))
        return String(decoding: w.bytes, as: UTF8.self)
    }

    static func formatted(_ t: Double) -> String {
        "\"" + Date(timeIntervalSince1970: t).formatted(Date.ISO8601FormatStyle()) + "\""
    }

    @Test func boundariesAndLeapDays() {
        let cases: [Double] = [
            0, -0.001, -1.5, 0.999, 1_764_000_000.999, 951_782_399, 951_782_400, 951_868_800,  // 2000-02-28/29, 03-01
            4_107_542_400, 4_107_628_800,  // 2100-03-01 (2100 is not a leap year)
            -2_208_988_800, -2_208_988_800.5, -2_208_988_801,  // 1900-01-01 and just before (formatter)
            253_402_300_799, 253_402_300_799.9, 253_402_300_800,  // 9999-12-31T23:59:59 and 10000 (formatter)
            -12_219_292_800, -62_135_596_800,  // the Gregorian switch, year 1 (formatter)
            4_102_444_799.5, 1_709_164_800, 1_709_251_199,  // 2024-02-29
        ]
        for t in cases { #expect(Self.written(t) == Self.formatted(t), "\(t)") }
    }

    @Test func manyDates() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let t = Double.random(in: -2_300_000_000...253_500_000_000, using: &generator)
            #expect(Self.written(t) == Self.formatted(t), "\(t)")
        }
        // Every day of 1999-2001 at its first and last second.
        for day in 10_592..<11_692 {
            let t = Double(day) * 86_400
            #expect(Self.written(t) == Self.formatted(t), "\(t)")
            #expect(Self.written(t + 86_399) == Self.formatted(t + 86_399), "\(t + 86_399)")
        }
    }
}
