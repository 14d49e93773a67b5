import Foundation
import Testing

@testable import Postgres

/// `timestamptz` text (DateStyle ISO, as the pool sets it) to `Date`.
@Suite struct PostgresTimestampTests {
    @Test(arguments: [
        ("1970-01-01 00:00:00+00", 0.0),
        ("2026-11-29 12:34:56.123456+00", 1_795_955_696.123456),
        ("2026-11-29 12:34:56+00", 1_795_955_696),
        ("2026-11-29 18:04:56+05:30", 1_795_955_696),
        ("2026-11-29 07:34:56-05", 1_795_955_696),
        ("2000-02-29 00:00:00+00", 951_782_400),
        ("1969-12-31 23:59:59.5+00", -0.5),
        ("1900-03-01 00:00:00+00", -2_203_891_200),
        ("2026-11-29T12:34:56Z+00", nil),
    ] as [(String, Double?)])
    func parses(_ text: String, _ expected: Double?) throws {
        let parsed = PostgresRow.parseTimestamp(text)?.timeIntervalSince1970
        if let expected {
            let value = try #require(parsed)
            #expect(abs(value - expected) < 0.000_001)
        } else {
            #expect(parsed == nil)
        }
    }

    @Test(arguments: ["", "2026-11-29", "2026-13-01 00:00:00+00", "2026-11-29 24:00:00+00", "2026-11-29 12:34:56", "2026-11-29 12:34:56.+00",
        "2026-11-29 12:34:56+00:", "infinity", "2026-11-29 12:34:56+00 "])
    func refusesMalformed(_ text: String) {
        #expect(PostgresRow.parseTimestamp(text) == nil)
    }

    /// Times bound to statements: the hand-written form is Foundation's ISO 8601 form, over the
    /// years a stored time can hold, before the epoch included.
    @Test func formatsAsFoundationDoes() {
        let foundation = Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
        var generator = SystemRandomNumberGenerator()
        var dates = [0, -0.5, -1.5, 0.9996, 951_782_400, 1_795_955_696.123456, -2_203_891_200, 253_402_300_799.9991].map(Date.init(timeIntervalSince1970:))
        for _ in 0..<20_000 {
            // Milliseconds exactly: a time between two milliseconds may truncate either way in
            // a binary double, in either implementation.
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &generator)) / 1000 + 0.0001))
        }
        for date in dates {
            #expect(date.postgresText == date.formatted(foundation), "\(date.timeIntervalSince1970)")
        }
        #expect(Date(timeIntervalSince1970: 1_795_955_696.123456).postgresText == "2026-11-29T12:34:56.123Z")
    }
}
