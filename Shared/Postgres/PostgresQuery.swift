import Foundation

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
    public var postgresText: String {
        formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}

/// Bytes bound as `bytea` (hex text form).
public struct PostgresBytes: PostgresEncodable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var postgresText: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [0x5C, 0x78]  // \x
        out.reserveCapacity(2 + bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// An array bound as a PostgreSQL array literal (`{"a","b"}`), e.g. for `= ANY($1)`.
public struct PostgresArray<Element: PostgresEncodable>: PostgresEncodable {
    public let elements: [Element]
    public init(_ elements: [Element]) { self.elements = elements }
    public var postgresText: String {
        "{" + elements.map { e in
            "\"" + e.postgresText.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
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
