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
        try DecoderImpl(value: value, node: .root).unwrap(T.self)
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

/// Where a decoder or container stands in the value being decoded, as a chain from the leaf to
/// the root. A successful decode never needs its coding path, so the `[any CodingKey]` of
/// `codingPath` is built only when an error is thrown or a `Decodable` reads it; a member or
/// element read as a scalar adds no node at all, a nested decoder or container one.
indirect enum CodingPathNode {
    case root
    case key(any CodingKey, CodingPathNode)
    case index(Int, CodingPathNode)

    /// This node's coding path: the keys from the root down, an index as
    /// `JSONCodingKey(intValue:)` (`"Index 2"`, as `JSONDecoder` names it).
    var path: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while true {
            switch node {
            case .root:
                return keys.reversed()
            case .key(let key, let parent):
                keys.append(key)
                node = parent
            case .index(let index, let parent):
                keys.append(JSONCodingKey(intValue: index))
                node = parent
            }
        }
    }

    /// The path of `key`, a member of the value at this node.
    func appending(_ key: any CodingKey) -> CodingPathNode { .key(key, self) }

    /// The path of the element at `index` of the array at this node.
    func appending(index: Int) -> CodingPathNode { .index(index, self) }
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
    let node: CodingPathNode
    var codingPath: [any CodingKey] { node.path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw mismatch([String: Any].self, value, node.path)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw mismatch([Any].self, value, node.path)
        }
        return UnkeyedContainer(elements: elements, node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: Single value

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try decodeBool(value, node.path) }
    func decode(_ type: String.Type) throws -> String { try decodeString(value, node.path) }
    func decode(_ type: Double.Type) throws -> Double { try decodeDouble(value, node.path) }
    func decode(_ type: Float.Type) throws -> Float { try decodeFloat(value, node.path) }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(value, node.path) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(value, node.path) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(value, node.path) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(value, node.path) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(value, node.path) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(value, node.path) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(value, node.path) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(value, node.path) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(value, node.path) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(value, node.path) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(T.self) }

    /// Decodes `T`, with Foundation's special forms for `Date`, `Data` and `URL`.
    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return try decodeString(value, node.path) as! T }
        if T.self == Date.self { return try decodeDate(value, node.path) as! T }
        if T.self == Data.self { return try decodeData(value, node.path) as! T }
        if T.self == URL.self { return try decodeURL(value, node.path) as! T }
        return try T(from: self)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let node: CodingPathNode
    var codingPath: [any CodingKey] { node.path }

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: node.path, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return v
    }

    /// The coding path of member `key`, built only when an error needs it.
    private func path(_ key: Key) -> [any CodingKey] { node.appending(key).path }

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
        try DecoderImpl(value: member(key), node: node.appending(key)).unwrap(T.self)
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
        return try DecoderImpl(value: v, node: node.appending(key)).unwrap(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try DecoderImpl(value: member(key), node: node.appending(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try DecoderImpl(value: member(key), node: node.appending(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DecoderImpl(value: members["super"] ?? .null, node: node.appending(JSONCodingKey.super))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DecoderImpl(value: members[key.stringValue] ?? .null, node: node.appending(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let node: CodingPathNode
    private(set) var currentIndex = 0

    init(elements: [JSONValue], node: CodingPathNode) {
        self.elements = elements
        self.node = node
    }

    var codingPath: [any CodingKey] { node.path }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The coding path of the current element, built only when an error needs it.
    private var elementPath: [any CodingKey] { node.appending(index: currentIndex).path }

    /// The next element; does not advance.
    private func peek<T>(_ type: T.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: elementPath, debugDescription: "Unkeyed container is at end."))
        }
        return elements[currentIndex]
    }

    /// Reads the next element with `read`, which is given the element's path lazily; advances
    /// only when `read` succeeds.
    private mutating func next<T>(_ read: (JSONValue, @autoclosure () -> [any CodingKey]) throws -> T) throws -> T {
        let v = try peek(T.self)
        let result = try read(v, elementPath)
        currentIndex += 1
        return result
    }

    /// Reads the next element with a decoder of its own.
    private mutating func nextDecoder<T>(_ read: (DecoderImpl) throws -> T) throws -> T {
        let v = try peek(T.self)
        let result = try read(DecoderImpl(value: v, node: node.appending(index: currentIndex)))
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard try peek(Never?.self) == .null else { return false }
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
        try nextDecoder { try $0.unwrap(T.self) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try nextDecoder { try $0.container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder { try $0.unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try nextDecoder { $0 }
    }
}

// MARK: - Scalars

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
    if value == .null {
        return .valueNotFound(type, .init(codingPath: path(), debugDescription: "Expected \(type) value but found null instead."))
    }
    return .typeMismatch(type, .init(codingPath: path(), debugDescription: "Expected to decode \(type) but found \(value.kindDescription) instead."))
}

private func decodeBool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    guard case .bool(let b) = value else { throw mismatch(Bool.self, value, path()) }
    return b
}

private func decodeString(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard case .string(let s) = value else { throw mismatch(String.self, value, path()) }
    return s
}

private func decodeDouble(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
    switch value {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: throw mismatch(Double.self, value, path())
    }
}

private func decodeFloat(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
    let d = try decodeDouble(value, path())
    guard abs(d) <= Double(Float.greatestFiniteMagnitude) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number does not fit in Float."))
    }
    return Float(d)
}

private func decodeInteger<T: FixedWidthInteger>(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
    let exact: T?
    switch value {
    case .int(let i): exact = T(exactly: i)
    case .double(let d): exact = d.rounded() == d ? T(exactly: d) : nil
    default: throw mismatch(T.self, value, path())
    }
    guard let exact else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number does not fit in \(T.self)."))
    }
    return exact
}

private func decodeDate(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Date {
    let s = try decodeString(value, path())
    guard s.utf8.count <= 64, isRFC3339DateTime(s), let date = try? Date.ISO8601FormatStyle().parse(s) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Expected date string to be ISO8601-formatted."))
    }
    // Whole seconds, as the encoder writes every date (`Date.ISO8601FormatStyle()`): a fraction
    // read would not survive the value's own JSON (an event relayed or re-encoded would carry
    // another time; EventFuzz found it).
    return Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
}

/// RFC 3339 `date-time` by its shape: `YYYY-MM-DDTHH:MM:SS`, an optional fraction (`.` and
/// digits), then `Z` or `±HH:MM`. Foundation's parser, which decides the fields' ranges, also
/// read three or four digits of seconds (`16:00:000.5Z`, `16:00:0000Z`).
func isRFC3339DateTime(_ s: String) -> Bool {
    let b = Array(s.utf8)
    func digits(_ range: Range<Int>) -> Bool { range.allSatisfy { $0 < b.count && (0x30...0x39).contains(b[$0]) } }
    guard b.count >= 20, digits(0..<4), b[4] == 0x2D, digits(5..<7), b[7] == 0x2D, digits(8..<10), b[10] == 0x54 || b[10] == 0x74,
        digits(11..<13), b[13] == 0x3A, digits(14..<16), b[16] == 0x3A, digits(17..<19)
    else { return false }
    var i = 19
    if b[i] == 0x2E {
        i += 1
        let start = i
        while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
        guard i > start else { return false }
    }
    guard i < b.count else { return false }
    if b[i] == 0x5A || b[i] == 0x7A { return i + 1 == b.count }
    guard b[i] == 0x2B || b[i] == 0x2D, i + 6 == b.count, digits((i + 1)..<(i + 3)), b[i + 3] == 0x3A, digits((i + 4)..<(i + 6)) else { return false }
    return true
}

private func decodeData(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Data {
    guard let data = Data(base64Encoded: try decodeString(value, path())) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Encountered Data is not valid Base64."))
    }
    return data
}

private func decodeURL(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> URL {
    guard let url = URL(string: try decodeString(value, path())) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Invalid URL string."))
    }
    return url
}
