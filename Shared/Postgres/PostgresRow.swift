import Foundation

/// One result row, in PostgreSQL's text format.
public struct PostgresRow: Sendable {
    let columns: [String: Int]
    let values: [String?]

    /// The raw text of `column`, or nil for NULL or an unknown column.
    public subscript(_ column: String) -> String? {
        guard let i = columns[column] else { return nil }
        return values[i]
    }

    public func string(_ column: String) -> String? { self[column] }
    public func int(_ column: String) -> Int? { self[column].flatMap { Int($0) } }
    public func int64(_ column: String) -> Int64? { self[column].flatMap { Int64($0) } }
    public func bool(_ column: String) -> Bool? { self[column].map { $0 == "t" || $0 == "true" } }
    public func uuid(_ column: String) -> UUID? { self[column].flatMap { UUID(uuidString: $0) } }

    /// A `text[]` column selected as `array_to_json(column)::text`.
    public func stringArray(_ column: String) -> [String]? {
        self[column].flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
    }

    /// A `bytea` column (hex output format).
    public func bytes(_ column: String) -> [UInt8]? {
        guard let text = self[column], text.hasPrefix("\\x") else { return nil }
        let hex = Array(text.utf8.dropFirst(2))
        guard hex.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(hex.count / 2)
        var i = 0
        func nib(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x57
            case 0x41...0x46: c - 0x37
            default: nil
            }
        }
        while i < hex.count {
            guard let h = nib(hex[i]), let l = nib(hex[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }

    /// A `timestamptz` column; connections run with `TimeZone = UTC` and `DateStyle = ISO`.
    public func date(_ column: String) -> Date? {
        guard let text = self[column] else { return nil }
        return PostgresRow.parseTimestamp(text)
    }

    /// Parses `2026-11-29 12:34:56.123456+00` (ISO DateStyle output).
    static func parseTimestamp(_ text: String) -> Date? {
        var s = text.replacingOccurrences(of: " ", with: "T")
        // Offsets come as +00 or +05:30; ISO 8601 parsing wants +00:00.
        if let r = s.range(of: "[+-][0-9]{2}$", options: .regularExpression) {
            s.replaceSubrange(r, with: s[r] + ":00")
        }
        let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        if let d = try? withFraction.parse(s) { return d }
        return try? Date.ISO8601FormatStyle().parse(s)
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
