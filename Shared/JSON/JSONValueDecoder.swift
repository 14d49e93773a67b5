import FoundationEssentials

/// Decodes `Decodable` values from a ``JSONValue`` that ``JSONParser`` produced, so that a
/// request body is read by one strict parser (duplicate member names, lone surrogates, invalid
/// UTF-8 and excessive nesting refused) and never by a second, laxer one.
///
/// Errors are `DecodingError`s with the same cases and coding paths as Foundation's
/// `JSONDecoder`, so callers that map them to field names keep working. Behaviour follows
/// `JSONDecoder` with `dateDecodingStrategy = .iso8601`: unknown members are ignored, a
/// missing or `null` member decodes as `nil` for an optional, integers must be exact (an
/// integral `1.0` is an integer, `1.5` is not), `Data` is base64, `URL` a string, `Date` an
/// ISO 8601 internet date-time. Booleans and numbers are never converted into each other.
public struct JSONValueDecoder: Sendable {
    public init() {}

    /// Decodes `type` from `value`.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try DecoderImpl(value: value, codingPath: []).unwrap(T.self)
    }

    /// Parses `bytes` strictly and decodes `type` from them.
    ///
    /// - Throws: ``JSONParser/SyntaxError`` when the text is not acceptable JSON,
    ///   `DecodingError` when it does not fit `type`.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) throws -> T {
        try decode(type, from: JSONParser.parse(bytes, maximumDepth: maximumDepth))
    }
}

/// A coding key for an array index or a member name made up at run time.
struct JSONCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }
    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
    static let `super` = JSONCodingKey(stringValue: "super")
}

extension JSONValue {
    /// How `DecodingError`s describe what was found.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

private struct DecoderImpl: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw mismatch([Any].self, value, codingPath)
        }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: Single value

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try decodeBool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try decodeString(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try decodeDouble(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try decodeFloat(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(T.self) }

    /// Decodes `T`, with Foundation's special forms for `Date`, `Data` and `URL`.
    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return try decodeString(value, codingPath) as! T }
        if T.self == Date.self { return try decodeDate(value, codingPath) as! T }
        if T.self == Data.self { return try decodeData(value, codingPath) as! T }
        if T.self == URL.self { return try decodeURL(value, codingPath) as! T }
        return try T(from: self)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return v
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeBool(member(key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodeString(member(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeDouble(member(key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decodeFloat(member(key), path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeInteger(member(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodeInteger(member(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeInteger(member(key), path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodeInteger(member(key), path(key)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try DecoderImpl(value: member(key), codingPath: path(key)).unwrap(T.self)
    }

    // A missing member and a `null` one are both `nil` (as with JSONDecoder).
    private func present(_ key: Key) -> JSONValue? {
        guard let v = members[key.stringValue], v != .null else { return nil }
        return v
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key).map { try decodeBool($0, path(key)) } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key).map { try decodeString($0, path(key)) } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key).map { try decodeDouble($0, path(key)) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key).map { try decodeInteger($0, path(key)) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key).map { try decodeInteger($0, path(key)) } }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let v = present(key) else { return nil }
        return try DecoderImpl(value: v, codingPath: path(key)).unwrap(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try DecoderImpl(value: member(key), codingPath: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try DecoderImpl(value: member(key), codingPath: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DecoderImpl(value: members["super"] ?? .null, codingPath: codingPath + [JSONCodingKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DecoderImpl(value: members[key.stringValue] ?? .null, codingPath: path(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The next element and its path; does not advance.
    private func peek<T>(_ type: T.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [JSONCodingKey(intValue: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        return (elements[currentIndex], path)
    }

    private mutating func next<T>(_ read: (JSONValue, [any CodingKey]) throws -> T) throws -> T {
        let (v, path) = try peek(T.self)
        let result = try read(v, path)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        let (v, _) = try peek(Never?.self)
        guard v == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(decodeBool) }
    mutating func decode(_ type: String.Type) throws -> String { try next(decodeString) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(decodeDouble) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(decodeFloat) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(decodeInteger) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(decodeInteger) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(decodeInteger) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(decodeInteger) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(decodeInteger) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(decodeInteger) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(decodeInteger) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(decodeInteger) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(decodeInteger) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(decodeInteger) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next { v, path in try DecoderImpl(value: v, codingPath: path).unwrap(T.self) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next { v, path in try DecoderImpl(value: v, codingPath: path).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next { v, path in try DecoderImpl(value: v, codingPath: path).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next { v, path in DecoderImpl(value: v, codingPath: path) }
    }
}

// MARK: - Scalars

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    if value == .null {
        return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
    }
    return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(value.kindDescription) instead."))
}

private func decodeBool(_ value: JSONValue, _ path: [any CodingKey]) throws -> Bool {
    guard case .bool(let b) = value else { throw mismatch(Bool.self, value, path) }
    return b
}

private func decodeString(_ value: JSONValue, _ path: [any CodingKey]) throws -> String {
    guard case .string(let s) = value else { throw mismatch(String.self, value, path) }
    return s
}

private func decodeDouble(_ value: JSONValue, _ path: [any CodingKey]) throws -> Double {
    switch value {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: throw mismatch(Double.self, value, path)
    }
}

private func decodeFloat(_ value: JSONValue, _ path: [any CodingKey]) throws -> Float {
    let d = try decodeDouble(value, path)
    guard abs(d) <= Double(Float.greatestFiniteMagnitude) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Number does not fit in Float."))
    }
    return Float(d)
}

private func decodeInteger<T: FixedWidthInteger>(_ value: JSONValue, _ path: [any CodingKey]) throws -> T {
    let exact: T?
    switch value {
    case .int(let i): exact = T(exactly: i)
    case .double(let d): exact = d.rounded() == d ? T(exactly: d) : nil
    default: throw mismatch(T.self, value, path)
    }
    guard let exact else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Number does not fit in \(T.self)."))
    }
    return exact
}

private func decodeDate(_ value: JSONValue, _ path: [any CodingKey]) throws -> Date {
    let s = try decodeString(value, path)
    guard s.utf8.count <= 64, let date = try? Date.ISO8601FormatStyle().parse(s) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Expected date string to be ISO8601-formatted."))
    }
    return date
}

private func decodeData(_ value: JSONValue, _ path: [any CodingKey]) throws -> Data {
    guard let data = Data(base64Encoded: try decodeString(value, path)) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Encountered Data is not valid Base64."))
    }
    return data
}

private func decodeURL(_ value: JSONValue, _ path: [any CodingKey]) throws -> URL {
    guard let url = URL(string: try decodeString(value, path)) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Invalid URL string."))
    }
    return url
}
