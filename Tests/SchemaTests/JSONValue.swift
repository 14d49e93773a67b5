import Foundation

/// A JSON value, for comparing and validating documents whatever produced them.
///
/// `JSONSerialization` returns `NSNumber`s (with booleans as a distinct `NSNumber` subclass) and
/// `MiniYAML` returns Swift `Int`, `Double` and `Bool`; both convert to the same `JSONValue`.
/// Numbers are compared as `Double`, as JSON Schema does (`1` equals `1.0`).
enum JSONValue: Equatable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    struct ConversionError: Error, CustomStringConvertible {
        let path: String
        let found: String
        var description: String { "not a JSON value at \(path): \(found)" }
    }

    /// Converts a tree of the kind `JSONSerialization.jsonObject` or `MiniYAML.parse` returns.
    /// - Throws: ``ConversionError`` naming the path of anything else.
    init(any value: Any, path: String = "$") throws {
        // Booleans first: an NSNumber holding a Bool also answers to `as? Int`.
        if value is NSNull {
            self = .null
        } else if let b = value as? Bool, JSONValue.isBoolean(value) {
            self = .bool(b)
        } else if let s = value as? String {
            self = .string(s)
        } else if let n = value as? NSNumber {
            self = .number(n.doubleValue)
        } else if let a = value as? [Any] {
            self = .array(try a.enumerated().map { try JSONValue(any: $1, path: "\(path)[\($0)]") })
        } else if let o = value as? [String: Any] {
            var result: [String: JSONValue] = [:]
            for (k, v) in o { result[k] = try JSONValue(any: v, path: JSONValue.path(path, k)) }
            self = .object(result)
        } else {
            throw ConversionError(path: path, found: String(describing: type(of: value)))
        }
    }

    /// Parses JSON text.
    init(json bytes: some Sequence<UInt8>) throws {
        try self.init(any: JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
    }

    /// Encodes `value` and reads the JSON back, giving exactly what goes on the wire.
    init(encoding value: some Encodable, with encoder: JSONEncoder) throws {
        try self.init(json: encoder.encode(value))
    }

    private static let booleanType: AnyClass = type(of: NSNumber(value: true))

    private static func isBoolean(_ value: Any) -> Bool {
        if type(of: value) == Bool.self { return true }
        guard let n = value as? NSNumber else { return false }
        return type(of: n) == booleanType
    }

    // MARK: - Access

    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var objectValue: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    var numberValue: Double? { if case .number(let n) = self { n } else { nil } }
    var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }

    /// The keys of an object, sorted; empty for anything else.
    var keys: [String] { objectValue.map { $0.keys.sorted() } ?? [] }

    /// Returns the object with `key` set to `value` (or removed when `value` is nil).
    func setting(_ key: String, to value: JSONValue?) -> JSONValue {
        guard var o = objectValue else { return self }
        o[key] = value
        return .object(o)
    }

    /// Resolves a JSON pointer in URI-fragment form (`#/components/schemas/Problem`, RFC 6901).
    func resolve(pointer: String) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        let body = pointer.dropFirst()
        if body.isEmpty { return self }
        guard body.hasPrefix("/") else { return nil }
        var node = self
        for raw in body.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = String(raw).removingPercentEncoding?
                .replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") ?? String(raw)
            switch node {
            case .object(let o):
                guard let next = o[token] else { return nil }
                node = next
            case .array(let a):
                guard let i = Int(token), a.indices.contains(i) else { return nil }
                node = a[i]
            default:
                return nil
            }
        }
        return node
    }

    /// Every `$ref` string in the tree, with the path where it occurs.
    func references(at path: String = "#") -> [(path: String, ref: String)] {
        switch self {
        case .object(let o):
            var found: [(String, String)] = []
            if case .string(let r)? = o["$ref"] { found.append((path, r)) }
            for k in o.keys.sorted() { found += o[k]!.references(at: "\(path)/\(k)") }
            return found
        case .array(let a):
            return a.enumerated().flatMap { $1.references(at: "\(path)/\($0)") }
        default:
            return []
        }
    }

    /// `$.a.b[0]` style paths; keys that are not identifiers are bracketed.
    static func path(_ base: String, _ key: String) -> String {
        let plain = !key.isEmpty && key.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || $0 == "_"
        }
        return plain ? "\(base).\(key)" : "\(base)[\"\(key)\"]"
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let n): n == n.rounded() && abs(n) < 1e15 ? "\(Int(n))" : "\(n)"
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .object(let o): "{" + o.keys.sorted().map { "\"\($0)\": \(o[$0]!)" }.joined(separator: ", ") + "}"
        }
    }
}

/// Literals, for test vectors.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .number(Double(value)) }
    init(floatLiteral value: Double) { self = .number(value) }
}
