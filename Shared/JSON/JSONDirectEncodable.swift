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
    /// A `Date` as ``JSONValueEncoder`` writes it (`Date.ISO8601FormatStyle()`: UTC, whole
    /// seconds rounded down, `2025-11-24T16:00:00Z`). Dates from 1900 to 9999 are written here
    /// from the civil date of their day (proleptic Gregorian, which the formatter also uses
    /// from 1582 on), without the formatter's allocations (it was most of the cost of a
    /// sign-in's result and event); others go through the formatter. A test compares the two.
    public mutating func writeDate(_ date: Date) {
        let t = date.timeIntervalSince1970
        // 1900-01-01T00:00:00Z ..< 10000-01-01T00:00:00Z
        guard t >= -2_208_988_800, t < 253_402_300_800 else {
            writeString(date.formatted(Date.ISO8601FormatStyle()))
            return
        }
        let seconds = Int64(t.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = Int(seconds - days * 86_400)
        // Days since 1970-01-01 to year/month/day (H. Hinnant's civil_from_days).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = Int(doy - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yoe + era * 400 + (month <= 2 ? 1 : 0))
        reserveCapacity(22)
        func digits(_ w: inout JSONWriter, _ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                w.appendByte(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        appendByte(UInt8(ascii: "\""))
        digits(&self, year, 4)
        appendByte(UInt8(ascii: "-"))
        digits(&self, month, 2)
        appendByte(UInt8(ascii: "-"))
        digits(&self, day, 2)
        appendByte(UInt8(ascii: "T"))
        digits(&self, second / 3_600, 2)
        appendByte(UInt8(ascii: ":"))
        digits(&self, second / 60 % 60, 2)
        appendByte(UInt8(ascii: ":"))
        digits(&self, second % 60, 2)
        appendByte(UInt8(ascii: "Z"))
        appendByte(UInt8(ascii: "\""))
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
