import FoundationEssentials

/// A value that writes its own compact JSON: the bytes ``JSONValueEncoder`` produces for it
/// (members sorted by key, `nil` optionals left out, a `Date` as ISO 8601), without building
/// the encoder's tree.
///
/// For the few bodies written on every sign-in: in a profile of the authentication service
/// under the ceremony load (`perf record`, release), `HTTPResponse.json` through the generic
/// encoder was 4.4 % of the service's CPU (`Slot`/`ObjectBox` allocations, the per-object key
/// sort, generic metadata lookups).
///
/// - Important: a conforming type keeps ``writeJSON(to:)`` in step with its `Encodable`
///   conformance; a test compares the two outputs over examples of each type (optionals set
///   and absent, strings that need escaping), so a field added to one and not the other fails.
public protocol JSONDirectEncodable: Encodable {
    /// Writes the value as ``JSONValueEncoder/encodeToBytes(_:)`` would.
    func writeJSON(to writer: inout JSONWriter)
}

extension JSONWriter {
    /// A `Date` as ``JSONValueEncoder`` writes it (the same formatter).
    public mutating func writeDate(_ date: Date) {
        writeString(date.formatted(Date.ISO8601FormatStyle()))
    }

    /// A value that writes itself.
    public mutating func write(_ value: some JSONDirectEncodable) {
        value.writeJSON(to: &self)
    }
}

extension JSONDirectEncodable {
    /// The value's compact JSON.
    public var directJSONBytes: [UInt8] {
        var writer = JSONWriter()
        writeJSON(to: &writer)
        return writer.bytes
    }
}
