import FoundationEssentials
import JSON
import Platform

/// A value that can be bound as a query parameter, sent in PostgreSQL's text format.
public protocol PostgresEncodable: Sendable {
    /// The text form PostgreSQL parses for the parameter's inferred type.
    var postgresText: String { get }
}

extension String: PostgresEncodable { public var postgresText: String { self } }
extension Int: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int32: PostgresEncodable { public var postgresText: String { String(self) } }
extension Bool: PostgresEncodable { public var postgresText: String { self ? "true" : "false" } }
extension Double: PostgresEncodable { public var postgresText: String { String(self) } }
extension UUID: PostgresEncodable { public var postgresText: String { uuidString.lowercased() } }
extension Date: PostgresEncodable {
    /// ISO 8601 in UTC with milliseconds (`2026-11-29T12:34:56.123Z`), the instant truncated to
    /// the millisecond, by `JSONWriter`'s timestamp writer (log lines' and events' too):
    /// Foundation's formatter cost about 1 % of a sign-in's CPU, and every statement binding a
    /// time formats one.
    public var postgresText: String { JSONWriter.millisecondTimestamp(self) }
}

/// Bytes bound as `bytea` (hex text form).
public struct PostgresBytes: PostgresEncodable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var postgresText: String {
        // Written straight into the string's storage: one allocation (there were three: the
        // digits' array, the output array, the string).
        String(unsafeUninitializedCapacity: 2 + bytes.count * 2) { out in
            out[0] = 0x5C  // \
            out[1] = 0x78  // x
            return HexText.write(bytes, into: out, at: 2)
        }
    }
}

/// An array bound as a PostgreSQL array literal (`{"a","b"}`), e.g. for `= ANY($1)`.
public struct PostgresArray<Element: PostgresEncodable>: PostgresEncodable {
    public let elements: [Element]
    public init(_ elements: [Element]) { self.elements = elements }
    public var postgresText: String {
        // Every `\` and `"` escaped with a `\`, scalar by scalar (a quote followed by a
        // combining mark is still a quote to PostgreSQL's array parser).
        "{" + elements.map { e in
            var quoted = String.UnicodeScalarView()
            quoted.append("\"")
            for scalar in e.postgresText.unicodeScalars {
                if scalar == "\\" || scalar == "\"" { quoted.append("\\") }
                quoted.append(scalar)
            }
            quoted.append("\"")
            return String(quoted)
        }.joined(separator: ",") + "}"
    }
}

/// SQL with bound parameters, built by string interpolation: every interpolated value becomes
/// a `$n` parameter, never text spliced into the statement.
///
/// ```swift
/// let rows = try await conn.query("SELECT name FROM tenants WHERE id = \(tenantID)")
/// ```
public struct PostgresQuery: ExpressibleByStringInterpolation, Sendable {
    public private(set) var sql: String
    public private(set) var binds: [String?]

    public init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// Builds a query from SQL with explicit `$n` placeholders and their values.
    public init(unsafeSQL sql: String, binds: [String?] = []) {
        self.sql = sql
        self.binds = binds
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)  // a sign-in's statement binds 16: five growths
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }
    }
}
