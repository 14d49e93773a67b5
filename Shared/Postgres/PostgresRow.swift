import FoundationEssentials
import JSON
import Platform

/// One result row, in PostgreSQL's text format.
public struct PostgresRow: Sendable {
    /// The result's column names in order, one array shared by its rows.
    let columns: [String]
    let values: [String?]

    /// The raw text of `column`, or nil for NULL or an unknown column. Of two columns with
    /// the same name, the last. Found by comparing names: a result has a handful of columns,
    /// and equal small names compare as two words, where a dictionary hashed the name on every
    /// read (the outbox relay read eight a row: 1.4 % of its thread).
    public subscript(_ column: String) -> String? {
        guard let i = columns.lastIndex(of: column) else { return nil }
        return values[i]
    }

    public func string(_ column: String) -> String? { self[column] }
    public func int(_ column: String) -> Int? { self[column].flatMap { Int($0) } }
    public func int64(_ column: String) -> Int64? { self[column].flatMap { Int64($0) } }
    public func bool(_ column: String) -> Bool? { self[column].map { $0 == "t" || $0 == "true" } }
    public func uuid(_ column: String) -> UUID? { self[column].flatMap { UUID(uuidString: $0) } }

    /// A `text[]` column selected as `array_to_json(column)::text`.
    public func stringArray(_ column: String) -> [String]? {
        self[column].flatMap { try? JSONParser.parse(Array($0.utf8), maximumDepth: 2).stringArrayValue }
    }

    /// A `bytea` column (hex output format), decoded from the text in place.
    public func bytes(_ column: String) -> [UInt8]? {
        guard var text = self[column] else { return nil }
        return text.withUTF8 { b -> [UInt8]? in
            guard b.count >= 2, b[0] == 0x5C, b[1] == 0x78 else { return nil }  // \x
            return HexText.decode(UnsafeBufferPointer(rebasing: b[2...]))
        }
    }

    /// A `timestamptz` column; connections run with `TimeZone = UTC` and `DateStyle = ISO`.
    public func date(_ column: String) -> Date? {
        guard let text = self[column] else { return nil }
        return PostgresRow.parseTimestamp(text)
    }

    /// Parses `2026-11-29 12:34:56.123456+00` (ISO DateStyle output; offsets `+hh`, `+hh:mm`
    /// or `+hh:mm:ss`, up to six fraction digits). Hand-written: Foundation's ISO 8601 parsing
    /// showed up in profiles of every request that reads a timestamp.
    static func parseTimestamp(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            var i = 0
            func digits(_ n: Int) -> Int? {
                guard i + n <= b.count else { return nil }
                var v = 0
                for k in 0..<n {
                    let c = b[i + k]
                    guard c >= 0x30, c <= 0x39 else { return nil }
                    v = v * 10 + Int(c - 0x30)
                }
                i += n
                return v
            }
            func expect(_ c: UInt8) -> Bool {
                guard i < b.count, b[i] == c else { return false }
                i += 1
                return true
            }
            guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2),
                i < b.count, b[i] == 0x20 || b[i] == 0x54
            else { return nil }
            i += 1
            guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2),
                (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
            else { return nil }
            var fraction = 0.0
            if i < b.count, b[i] == 0x2E {
                i += 1
                var scale = 0.1
                var count = 0
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                    count += 1
                    guard count <= 9 else { return nil }
                    fraction += Double(b[i] - 0x30) * scale
                    scale /= 10
                    i += 1
                }
                guard count > 0 else { return nil }
            }
            guard i < b.count, b[i] == 0x2B || b[i] == 0x2D else { return nil }
            let sign = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            var offset = oh * 3600
            if expect(0x3A) {
                guard let om = digits(2) else { return nil }
                offset += om * 60
                if expect(0x3A) {
                    guard let os = digits(2) else { return nil }
                    offset += os
                }
            }
            guard i == b.count else { return nil }
            let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
            let seconds = days * 86400 + hour * 3600 + minute * 60 + second - sign * offset
            return Date(timeIntervalSince1970: Double(seconds) + fraction)
        }
    }
}

/// The rows of a result, plus the command's affected-row count.
public struct PostgresRows: Sendable, Sequence {
    public let rows: [PostgresRow]
    /// Rows affected by INSERT/UPDATE/DELETE (`PQcmdTuples`).
    public let affectedRows: Int

    public func makeIterator() -> IndexingIterator<[PostgresRow]> { rows.makeIterator() }
    public var first: PostgresRow? { rows.first }
    public var count: Int { rows.count }
    public var isEmpty: Bool { rows.isEmpty }
}
