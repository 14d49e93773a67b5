/// Any JSON value, for the members of wire types that carry free-form JSON (sign-in signals
/// and context, ruleset documents, explain facts). Integers that fit in `Int64` stay exact.
public indirect enum AnyJSON: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([AnyJSON])
    case object([String: AnyJSON])

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
        } else if let a = try? container.decode([AnyJSON].self) {
            self = .array(a)
        } else if let o = try? container.decode([String: AnyJSON].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

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

    /// Nesting depth (a scalar is 0), to bound what requests may send.
    public var depth: Int {
        switch self {
        case .array(let a): 1 + (a.map(\.depth).max() ?? 0)
        case .object(let o): 1 + (o.values.map(\.depth).max() ?? 0)
        default: 0
        }
    }
}
