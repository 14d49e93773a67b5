import FoundationEssentials

/// Encodes `Encodable` values into a ``JSONValue``, and into compact JSON text through
/// ``JSONWriter`` (no whitespace, members sorted by key, `/` not escaped).
///
/// Behaviour follows Foundation's `JSONEncoder` with `outputFormatting = [.sortedKeys,
/// .withoutEscapingSlashes]` and `dateEncodingStrategy = .iso8601`: `nil` optionals are left
/// out, `Date` is an ISO 8601 internet date-time, `Data` base64, `URL` its absolute string, a
/// value that encodes nothing is `{}`, and a non-finite number is an error (JSON has none).
public struct JSONValueEncoder: Sendable {
    public init() {}

    /// The value as a JSON value tree.
    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        try box(value, codingPath: []).resolved
    }

    /// The value as compact JSON text, the same as ``JSONWriter`` writes ``encode(_:)``'s
    /// result (written straight from the encoder's tree).
    public func encodeToBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        var writer = JSONWriter()
        try box(value, codingPath: []).write(to: &writer)
        return writer.bytes
    }
}

// MARK: - The tree being built

/// A place in the tree: a finished value, or a container that containers handed out earlier
/// may still add to (hence classes).
private enum Slot {
    case value(JSONValue)
    case object(ObjectBox)
    case array(ArrayBox)
    case encoder(EncoderImpl)

    var resolved: JSONValue {
        switch self {
        case .value(let v): v
        case .object(let box): .object(Dictionary(box.members.map { ($0.key, $0.value.resolved) }, uniquingKeysWith: { _, last in last }))
        case .array(let box): .array(box.elements.map(\.resolved))
        case .encoder(let e): e.slot?.resolved ?? .object([:])
        }
    }

    func write(to writer: inout JSONWriter) {
        switch self {
        case .value(let v): writer.write(v)
        case .object(let box):
            writer.beginObject()
            for (i, member) in box.sortedMembers.enumerated() {
                writer.writeMemberName(member.key, first: i == 0)
                member.value.write(to: &writer)
            }
            writer.endObject()
        case .array(let box):
            writer.beginArray()
            for (i, element) in box.elements.enumerated() {
                if i > 0 { writer.writeComma() }
                element.write(to: &writer)
            }
            writer.endArray()
        case .encoder(let e): (e.slot ?? .value(.object([:]))).write(to: &writer)
        }
    }
}

/// An object's members in the order they were encoded; a key encoded twice keeps its last
/// value (as a dictionary would), and the output is sorted by key.
private final class ObjectBox {
    var members: [(key: String, value: Slot)] = []

    func set(_ key: String, _ slot: Slot) { members.append((key, slot)) }

    var sortedMembers: [(key: String, value: Slot)] {
        // Stable sort, then the last of equal keys.
        let sorted = members.enumerated().sorted { a, b in a.element.key != b.element.key ? a.element.key < b.element.key : a.offset < b.offset }
        var out: [(key: String, value: Slot)] = []
        out.reserveCapacity(sorted.count)
        for (_, member) in sorted {
            if let last = out.last, last.key == member.key { out[out.count - 1] = member } else { out.append(member) }
        }
        return out
    }
}

private final class ArrayBox {
    var elements: [Slot] = []
}

/// Encodes one value: its primitives directly, `Date`/`Data`/`URL` in their JSON forms,
/// anything else through its `encode(to:)`.
private func box<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> Slot {
    // Type comparisons, not `as?` casts: they are pointer comparisons.
    if T.self == String.self { return .value(.string(value as! String)) }
    if T.self == Bool.self { return .value(.bool(value as! Bool)) }
    if T.self == Int.self { return .value(.int(Int64(value as! Int))) }
    if T.self == Double.self { return .value(try number(value as! Double, codingPath)) }
    if T.self == Date.self { return .value(.string((value as! Date).formatted(Date.ISO8601FormatStyle()))) }
    if T.self == Data.self { return .value(.string((value as! Data).base64EncodedString())) }
    if T.self == URL.self { return .value(.string((value as! URL).absoluteString)) }
    let encoder = EncoderImpl(codingPath: codingPath)
    try value.encode(to: encoder)
    return encoder.slot ?? .value(.object([:]))
}

private func number(_ d: Double, _ codingPath: [any CodingKey]) throws -> JSONValue {
    guard d.isFinite else {
        throw EncodingError.invalidValue(d, .init(codingPath: codingPath, debugDescription: "Unable to encode \(d) directly in JSON."))
    }
    return .double(d)
}

/// A `Float` as the shortest decimal that reads back as it (0.1, not 0.10000000149011612), as
/// JSONEncoder writes it.
private func number(_ f: Float, _ codingPath: [any CodingKey]) throws -> JSONValue {
    try number(Double("\(f)") ?? Double(f), codingPath)
}

private func integer<T: FixedWidthInteger>(_ i: T, _ codingPath: [any CodingKey]) throws -> JSONValue {
    guard let exact = Int64(exactly: i) else {
        throw EncodingError.invalidValue(i, .init(codingPath: codingPath, debugDescription: "\(T.self) value \(i) is out of the exact integer range."))
    }
    return .int(exact)
}

private final class EncoderImpl: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var slot: Slot?

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A second request for a keyed container adds to the same object (as JSONEncoder).
        if case .object(let box) = slot {
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
        }
        let box = ObjectBox()
        slot = .object(box)
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array(let box) = slot { return UnkeyedContainer(box: box, codingPath: codingPath) }
        let box = ArrayBox()
        slot = .array(box)
        return UnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: EncoderImpl
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: JSONValue) { encoder.slot = .value(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try number(value, codingPath)) }
    mutating func encode(_ value: Float) throws { set(try number(value, codingPath)) }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(try integer(value, codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.slot = try box(value, codingPath: codingPath) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ObjectBox
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, _ key: Key) { box.set(key.stringValue, .value(value)) }
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try number(value, path(key)), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try number(value, path(key)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try integer(value, path(key)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try integer(value, path(key)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.set(key.stringValue, try JSON.box(value, codingPath: path(key)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        box.set(key.stringValue, .object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        box.set(key.stringValue, .array(nested))
        return UnkeyedContainer(box: nested, codingPath: path(key))
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = EncoderImpl(codingPath: codingPath + [JSONCodingKey.super])
        box.set("super", .encoder(encoder))
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = EncoderImpl(codingPath: path(key))
        box.set(key.stringValue, .encoder(encoder))
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.elements.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONCodingKey(intValue: box.elements.count)] }
    private func append(_ value: JSONValue) { box.elements.append(.value(value)) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try number(value, nextPath)) }
    mutating func encode(_ value: Float) throws { append(try number(value, nextPath)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(try integer(value, nextPath)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(try integer(value, nextPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        box.elements.append(try JSON.box(value, codingPath: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        let nested = ObjectBox()
        box.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let nested = ArrayBox()
        box.elements.append(.array(nested))
        return UnkeyedContainer(box: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = EncoderImpl(codingPath: nextPath)
        box.elements.append(.encoder(encoder))
        return encoder
    }
}
