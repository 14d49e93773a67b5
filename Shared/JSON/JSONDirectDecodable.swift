/// A `Decodable` type that also reads itself straight from a parsed ``JSONValue``, without
/// Codable's containers: for the bodies of the busiest routes (a sign-in's two), where the
/// containers' generic dispatch, coding keys and metadata lookups cost more than the strict
/// parse before them.
///
/// The direct reading handles success only: it returns nil for anything that does not fit, and
/// ``JSONValueDecoder/decodeDirectly(_:from:)`` then decodes with Codable, whose `DecodingError`
/// names the field. A refusal's error is therefore Codable's by construction. Where the direct
/// reading returns a value, it must be the value ``JSONValueDecoder`` returns for the same
/// input (members not read are ignored, an optional member absent or `null` is nil, a
/// non-optional one must be there and not `null`, types are never converted): a conformance
/// built from ``JSONDirectObject``'s accessors gets those rules from them, and its tests check
/// it against Codable over many inputs.
public protocol JSONDirectDecodable: Decodable {
    /// The value `value` holds, or nil when it does not fit (Codable then says why).
    init?(directJSON value: JSONValue)
}

extension JSONValueDecoder {
    /// Decodes `type` from `value`: directly when it fits, else with Codable (and its error).
    public func decodeDirectly<T: JSONDirectDecodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        if let decoded = T(directJSON: value) { return decoded }
        return try decode(type, from: value)
    }
}

/// The members of a JSON object, read by the rules of ``JSONValueDecoder``'s synthesized
/// `Decodable` conformances. Each accessor's outer nil means "does not fit".
public struct JSONDirectObject {
    public let members: [String: JSONValue]

    /// The object's members; nil when `value` is not an object.
    @inlinable public init?(_ value: JSONValue) {
        guard case .object(let members) = value else { return nil }
        self.members = members
    }

    /// A non-optional `String` member: nil when absent, `null` or not a string.
    @inlinable public func string(_ key: String) -> String? {
        guard case .string(let s)? = members[key] else { return nil }
        return s
    }

    /// An optional `String` member: `.some(nil)` when absent or `null`, nil when not a string.
    @inlinable public func optionalString(_ key: String) -> String?? {
        switch members[key] {
        case nil, .null?: .some(nil)
        case .string(let s)?: .some(s)
        default: nil
        }
    }

    /// An optional `Bool` member: `.some(nil)` when absent or `null`, nil when not a Boolean.
    @inlinable public func optionalBool(_ key: String) -> Bool?? {
        switch members[key] {
        case nil, .null?: .some(nil)
        case .bool(let b)?: .some(b)
        default: nil
        }
    }

    /// An optional `[String]` member: `.some(nil)` when absent or `null`, nil when not an
    /// array of strings only.
    @inlinable public func optionalStringArray(_ key: String) -> [String]?? {
        switch members[key] {
        case nil, .null?: return .some(nil)
        case .array(let elements)?:
            var strings: [String] = []
            strings.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let s) = element else { return nil }
                strings.append(s)
            }
            return .some(strings)
        default: return nil
        }
    }

    /// A non-optional member of a directly decodable type: nil when absent, `null` or not fit.
    @inlinable public func value<T: JSONDirectDecodable>(_ key: String, as type: T.Type) -> T? {
        guard let member = members[key] else { return nil }
        return T(directJSON: member)
    }

    /// An optional member of a directly decodable type: `.some(nil)` when absent or `null`,
    /// nil when not fit.
    @inlinable public func optionalValue<T: JSONDirectDecodable>(_ key: String, as type: T.Type) -> T?? {
        switch members[key] {
        case nil, .null?: return .some(nil)
        case let member?:
            guard let decoded = T(directJSON: member) else { return nil }
            return .some(decoded)
        }
    }
}
