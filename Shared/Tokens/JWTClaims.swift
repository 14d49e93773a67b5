import FoundationEssentials
import JSON

/// A JWT claim set (RFC 7519 §4): the registered claims as properties, every other claim
/// (`amr`, `acr`, `sign_up`, transaction fields…) in ``extra``.
///
/// Times are NumericDates (seconds since the epoch); they are written as integers, and read
/// from integers or fractional numbers. `aud` is read as a string or an array of strings,
/// and written as a string when there is one audience.
public struct JWTClaims: Sendable, Hashable {
    /// `iss`.
    public var issuer: String?
    /// `sub`.
    public var subject: String?
    /// `aud`, as a list (a single string is one element).
    public var audience: [String]?
    /// `exp`.
    public var expiresAt: Date?
    /// `nbf`.
    public var notBefore: Date?
    /// `iat`.
    public var issuedAt: Date?
    /// `jti`.
    public var id: String?
    /// Every claim that is not registered. Registered names put here are ignored when the
    /// claims are written: set the properties instead.
    public var extra: [String: JSONValue]

    /// The registered claim names (RFC 7519 §4.1).
    public static let registeredNames: Set<String> = ["iss", "sub", "aud", "exp", "nbf", "iat", "jti"]

    /// A claim set; every claim is optional.
    public init(
        issuer: String? = nil, subject: String? = nil, audience: [String]? = nil, expiresAt: Date? = nil,
        notBefore: Date? = nil, issuedAt: Date? = nil, id: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.id = id
        self.extra = extra
    }

    /// A claim by name, registered or not, as JSON.
    public subscript(claim name: String) -> JSONValue? { jsonObject[name] }

    // MARK: - JSON

    /// Reads a claim set from its JSON members.
    ///
    /// - Throws: `invalid_claim` when a registered claim has the wrong type (`exp` not a
    ///   number, `aud` neither a string nor a non-empty array of strings…).
    public init(jsonObject members: [String: JSONValue]) throws(JOSEError) {
        var rest = members
        func string(_ name: String) throws(JOSEError) -> String? {
            guard let value = rest.removeValue(forKey: name) else { return nil }
            guard case .string(let s) = value else { throw JOSEError(.invalidClaim, "\(name) is not a string") }
            return s
        }
        func date(_ name: String) throws(JOSEError) -> Date? {
            guard let value = rest.removeValue(forKey: name) else { return nil }
            guard let seconds = value.doubleValue, seconds.isFinite else {
                throw JOSEError(.invalidClaim, "\(name) is not a NumericDate")
            }
            return Date(timeIntervalSince1970: seconds)
        }
        issuer = try string("iss")
        subject = try string("sub")
        id = try string("jti")
        expiresAt = try date("exp")
        notBefore = try date("nbf")
        issuedAt = try date("iat")
        switch rest.removeValue(forKey: "aud") {
        case nil: audience = nil
        case .string(let s)?: audience = [s]
        case let value?:
            guard let list = value.stringArrayValue, !list.isEmpty else {
                throw JOSEError(.invalidClaim, "aud is neither a string nor a non-empty array of strings")
            }
            audience = list
        }
        extra = rest
    }

    /// The claim set as JSON members.
    public var jsonObject: [String: JSONValue] { Dictionary(uniqueKeysWithValues: members) }

    /// The claim set's compact JSON, members sorted by name: the bytes of
    /// `JSONWriter.write(.object(jsonObject))` (a test compares them), from a sorted array
    /// instead of a dictionary built, hashed and sorted on every token signed.
    func write(to writer: inout JSONWriter) {
        writer.writeObject(members.sorted { $0.0 < $1.0 })
    }

    /// Every member once: `extra` without the registered names, then the registered claims set.
    private var members: [(String, JSONValue)] {
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(extra.count + 7)
        for (name, value) in extra where !JWTClaims.registeredNames.contains(name) { members.append((name, value)) }
        if let issuer { members.append(("iss", .string(issuer))) }
        if let subject { members.append(("sub", .string(subject))) }
        if let audience { members.append(("aud", audience.count == 1 ? .string(audience[0]) : .array(audience.map(JSONValue.string)))) }
        if let expiresAt { members.append(("exp", JWTClaims.numericDate(expiresAt))) }
        if let notBefore { members.append(("nbf", JWTClaims.numericDate(notBefore))) }
        if let issuedAt { members.append(("iat", JWTClaims.numericDate(issuedAt))) }
        if let id { members.append(("jti", .string(id))) }
        return members
    }

    /// Whole seconds, rounded down, as RFC 7519 §2 NumericDate; a number past `Int64` (read
    /// from a token: `"iat": 1e30`) stays a double instead of trapping the conversion (JWSFuzz).
    private static func numericDate(_ date: Date) -> JSONValue {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        if let whole = Int64(exactly: seconds) { return .int(whole) }
        return .double(seconds)
    }
}

// MARK: - Codable

extension JWTClaims: Codable {
    /// Reads a claim set as ``init(jsonObject:)`` does; wrong types are `DecodingError`s.
    public init(from decoder: any Decoder) throws {
        let members = try [String: JSONValue](from: decoder)
        do {
            try self.init(jsonObject: members)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.debugDescription))
        }
    }

    /// Writes ``jsonObject``.
    public func encode(to encoder: any Encoder) throws {
        try jsonObject.encode(to: encoder)
    }
}
