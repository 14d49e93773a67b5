import FoundationEssentials
import Testing

@testable import Schema

/// `ce_time`: the hand-written form and reading of what Signet writes agree with Foundation's
/// ISO 8601 style, which everything else still goes to.
@Suite struct TimestampTests {
    static let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func foundationParse(_ text: String) -> Date? {
        (try? foundation.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    /// Times a tenth of a millisecond past a millisecond: one exactly on it may truncate either
    /// way in a binary double, in either implementation (Foundation writes 951868799.999 as
    /// `.998`, from its reference-date double).
    static func randomDates() -> [Date] {
        var generator = SystemRandomNumberGenerator()
        var dates = [0, -0.5, -1.5, 0.9996, 951_782_400, 1_795_955_696.123456, -2_208_988_800, 253_402_300_799.9991]
            .map(Date.init(timeIntervalSince1970:))
        for _ in 0..<20_000 {
            let milliseconds = Int64.random(in: -2_208_988_800_000..<253_402_300_800_000, using: &generator)
            dates.append(Date(timeIntervalSince1970: Double(milliseconds) / 1000 + 0.0001))
        }
        return dates
    }

    @Test func formatsAsFoundationDoes() throws {
        for date in Self.randomDates() {
            #expect(Timestamp.format(date) == Self.foundation.format(date), "\(date.timeIntervalSince1970)")
        }
        // Any double: at most the millisecond a boundary case truncates to.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -2_208_988_800..<253_402_300_800, using: &generator))
            let ours = try #require(Self.foundationParse(Timestamp.format(date)))
            let theirs = try #require(Self.foundationParse(Self.foundation.format(date)))
            #expect(abs(ours.timeIntervalSince(theirs)) < 0.0011, "\(date.timeIntervalSince1970)")
        }
        // Outside the hand-written years, Foundation writes it.
        let early = Date(timeIntervalSince1970: -2_208_988_801)
        #expect(Timestamp.format(early) == Self.foundation.format(early))
    }

    /// Read back to within a tenth of a millisecond of Foundation's reading (doubles near the
    /// year 9999 are 30 µs apart, and the two round differently).
    @Test func readsWhatItWritesAsFoundationDoes() throws {
        for date in Self.randomDates() {
            let text = Timestamp.format(date)
            let canonical = try #require(Timestamp.parseCanonical(text), "\(text)")
            let reference = try #require(Self.foundationParse(text))
            #expect(abs(canonical.timeIntervalSince(reference)) < 0.000_1, "\(text)")
            #expect(Timestamp.parse(text) == canonical)
            let whole = String(text.prefix(19)) + "Z"
            let wholeReference = try #require(Self.foundationParse(whole))
            #expect(abs(try #require(Timestamp.parseCanonical(whole)).timeIntervalSince(wholeReference)) < 0.000_1, "\(whole)")
        }
    }

    /// Texts outside the canonical form (or in it with a field out of range) are Foundation's
    /// to accept or refuse, leniencies included: the answer is the same as before.
    @Test(arguments: [
        "2026-12-04T21:14:45.1234Z", "2026-12-04T21:14:45.1Z", "2026-02-30T00:00:00.000Z", "2026-02-29T00:00:00.000Z",
        "2024-02-29T00:00:00.000Z", "2100-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-12-04T23:59:60.000Z",
        "2026-12-04T21:14:45.123+01:00", "2026-12-04t21:14:45.123z", "2026-13-04T21:14:45.123Z", "2026-00-04T21:14:45.123Z",
        "2026-12-00T21:14:45.123Z", "2026-12-04T24:00:00.000Z", "2026-12-04T21:60:00.000Z", "2026-12-04T21:14:45.123Zjunk",
        "1899-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z", " 2026-12-04T21:14:45.123Z", "2026-12-04T21:14:45.Z",
        "2026-12-04T21:14:45.12aZ", "2026-1a-04T21:14:45.123Z", "2026-12-04 21:14:45.123Z", "2026-12-04T21:14:45.123+0100",
        "", "yesterday", "2026-12-04T21:14:45", "+2026-12-04T21:14:45.123Z",
    ])
    func otherTextsGetFoundationsAnswer(_ text: String) {
        let canonical = Timestamp.parseCanonical(text)
        let reference = Self.foundationParse(text)
        if let canonical {
            let reference = reference
            #expect(reference.map { abs(canonical.timeIntervalSince($0)) < 0.000_1 } == true, "\(text)")
        }
        #expect(Timestamp.parse(text) == (canonical ?? reference))
    }

    @Test func theCanonicalFormIsChecked() {
        #expect(Timestamp.parseCanonical("2026-02-30T00:00:00.000Z") == nil)  // Foundation's: 2026-03-02
        #expect(Timestamp.parseCanonical("2026-12-04T23:59:60.000Z") == nil)
        #expect(Timestamp.parseCanonical("1899-12-31T23:59:59.999Z") == nil)
        #expect(Timestamp.parseCanonical("2026-12-04T21:14:45.123Zjunk") == nil)
        #expect(Timestamp.parseCanonical("2024-02-29T00:00:00.000Z") != nil)
    }
}
