import FoundationEssentials
import Tokens
import JSON

/// A cursor over the strict JSON tree (``JSONValue``) of an MDS3 payload that knows where it
/// is, so every decoding failure names the member as a JSON Pointer (RFC 6901), e.g.
/// `/entries/17/statusReports/0/status`.
///
/// Members that Signet does not read are never looked at (tolerant of additions to the
/// format); members it reads must have exactly the type the MDS3 specification gives them.
struct MetadataJSON {
    /// Why a member could not be read: where, and a fixed reason (never the member's value).
    struct Failure: Error, Sendable {
        let path: String
        let reason: String
    }

    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String = "") {
        self.value = value
        self.path = path
    }

    func fail(_ reason: String) -> Failure { Failure(path: path.isEmpty ? "/" : path, reason: reason) }

    /// RFC 6901 escaping of one reference token.
    static func escape(_ token: String) -> String {
        // Scalar by scalar, so that a "~" or "/" followed by a combining mark is escaped too.
        var escaped = String.UnicodeScalarView()
        for scalar in token.unicodeScalars {
            switch scalar {
            case "~": escaped.append(contentsOf: "~0".unicodeScalars)
            case "/": escaped.append(contentsOf: "~1".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    // MARK: - Navigation

    /// The member `key` of this object; nil when absent (a JSON `null` counts as absent).
    func member(_ key: String) throws(Failure) -> MetadataJSON? {
        guard case .object(let members) = value else { throw fail("expected an object") }
        guard let found = members[key] else { return nil }
        if case .null = found { return nil }
        return MetadataJSON(found, path: path + "/" + Self.escape(key))
    }

    /// The member `key`, which must be present.
    func required(_ key: String) throws(Failure) -> MetadataJSON {
        guard let m = try member(key) else {
            throw Failure(path: path + "/" + Self.escape(key), reason: "required member is missing")
        }
        return m
    }

    /// The elements of this array.
    func elements() throws(Failure) -> [MetadataJSON] {
        guard case .array(let items) = value else { throw fail("expected an array") }
        return items.enumerated().map { MetadataJSON($0.element, path: path + "/\($0.offset)") }
    }

    // MARK: - Scalars

    func string() throws(Failure) -> String {
        guard case .string(let s) = value else { throw fail("expected a string") }
        return s
    }

    func bool() throws(Failure) -> Bool {
        guard case .bool(let b) = value else { throw fail("expected a boolean") }
        return b
    }

    /// An integer written without fraction or exponent, within `range`.
    func integer(in range: ClosedRange<Int> = 0...Int(Int32.max)) throws(Failure) -> Int {
        switch value {
        case .int(let i):
            guard let n = Int(exactly: i), range.contains(n) else { throw fail("expected an integer in \(range)") }
            return n
        case .double: throw fail("expected an integer in \(range)")
        default: throw fail("expected a number")
        }
    }

    func strings() throws(Failure) -> [String] {
        var out: [String] = []
        for element in try elements() { out.append(try element.string()) }
        return out
    }

    /// A `YYYY-MM-DD` full-date (MDS3 dates), as midnight UTC.
    func date() throws(Failure) -> Date {
        guard let d = MetadataJSON.fullDate(try string()) else { throw fail("expected a date as YYYY-MM-DD") }
        return d
    }

    /// Midnight UTC of an RFC 3339 full-date `YYYY-MM-DD`; nil unless the text is exactly that
    /// and names a real day.
    static func fullDate(_ text: String) -> Date? {
        let u = Array(text.utf8)
        guard u.count == 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var n = 0
            for i in range {
                guard u[i] >= 0x30, u[i] <= 0x39 else { return nil }
                n = n * 10 + Int(u[i] - 0x30)
            }
            return n
        }
        guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10), (1...12).contains(m) else { return nil }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...monthDays[m - 1]).contains(d) else { return nil }
        // Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's
        // days_from_civil), so no Calendar or locale is involved.
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days) * 86_400)
    }
}
