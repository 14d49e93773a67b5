/// A JSON value, as carried by JOSE headers and JWT claims that Signet does not model with a
/// dedicated property (`amr`, `acr`, transaction fields…).
///
/// Integers that fit in `Int64` stay exact (`.int`); other numbers are `.double`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The integer, if this is an integer (or a double with an exact integer value).
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d):
            guard d.isFinite, d.rounded() == d, let i = Int64(exactly: d) else { return nil }
            return i
        default: return nil
        }
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The member `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let o) = self else { return nil }
        return o[key]
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The strings, if this is an array of strings only.
    public var stringArrayValue: [String]? {
        guard case .array(let a) = self else { return nil }
        var out: [String] = []
        out.reserveCapacity(a.count)
        for element in a {
            guard case .string(let s) = element else { return nil }
            out.append(s)
        }
        return out
    }

    /// Nesting depth (a scalar is 0), to bound what requests may send.
    public var depth: Int {
        switch self {
        case .array(let a): 1 + (a.map(\.depth).max() ?? 0)
        case .object(let o): 1 + (o.values.map(\.depth).max() ?? 0)
        default: 0
        }
    }

    /// Compact JSON text: no whitespace, object members sorted by key, `/` not escaped,
    /// non-ASCII left as UTF-8. Non-finite doubles (which JSON cannot carry) become `null`.
    public var jsonString: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.text
    }
}

// MARK: - Literals

/// Literals, so that claims read as JSON: `["amr": ["hwk"], "sign_up": true]`.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    /// The value of a literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// The value of a literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// The value of a literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// The value of a literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// The value of a literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// The value of a literal.
    public init(nilLiteral: ()) { self = .null }
    /// A duplicate key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Any JSON value, from any decoder (a Boolean is never read as a number).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else if let o = try? container.decode([String: JSONValue].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes the value as the JSON it is.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}
