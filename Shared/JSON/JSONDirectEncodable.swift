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
    /// from ``CivilDate`` (proleptic Gregorian, which the formatter also uses from 1582 on),
    /// without the formatter's allocations (most of the cost of a sign-in's result and event);
    /// others go through the formatter. A test compares the two.
    public mutating func writeDate(_ date: Date) {
        guard Self.writesByHand(date) else {
            writeString(date.formatted(Date.ISO8601FormatStyle()))
            return
        }
        writeUTCTimestamp(seconds: Int64(date.timeIntervalSince1970.rounded(.down)))
    }

    /// Whether `date` is in the years the hand-written forms cover (``CivilDate``'s four
    /// digits): 1900-01-01T00:00:00Z ..< 10000-01-01T00:00:00Z. Others go to Foundation.
    public static func writesByHand(_ date: Date) -> Bool {
        let t = date.timeIntervalSince1970
        return t >= -2_208_988_800 && t < 253_402_300_800
    }

    /// `date` as `2026-11-29T12:34:56.123Z`: UTC, the instant truncated to the millisecond, as
    /// `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes it, for years 1900 to
    /// 9999 (callers keep to them: statements' times; ``writesByHand(_:)`` tells).
    public static func millisecondTimestamp(_ date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let remainder = totalMilliseconds % 1000
        let (seconds, millisecond) =
            remainder < 0 ? (totalMilliseconds / 1000 - 1, remainder + 1000) : (totalMilliseconds / 1000, remainder)
        var writer = JSONWriter()
        writer.writeUTCTimestamp(seconds: seconds, milliseconds: Int(millisecond), quoted: false)
        return writer.text
    }

    /// A UTC time as ISO 8601 from seconds since the Unix epoch: `2025-11-24T16:00:00Z`, or with
    /// `milliseconds` (0...999) `2025-11-24T16:00:00.250Z`; quoted as a JSON string unless
    /// `quoted` is false (a text log line). Years 1900 to 9999 (``CivilDate``); callers keep to
    /// them (``writeDate(_:)`` sends others to the formatter, a log line's clock is now).
    public mutating func writeUTCTimestamp(seconds: Int64, milliseconds: Int? = nil, quoted: Bool = true) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = Int(seconds - days * 86_400)
        let (y, m, d) = CivilDate.of(daysSinceEpoch: days)
        let (year, month, day) = (Int(y), Int(m), Int(d))
        reserveCapacity(26)
        func digits(_ w: inout JSONWriter, _ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                w.appendByte(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        if quoted { appendByte(UInt8(ascii: "\"")) }
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
        if let milliseconds {
            appendByte(UInt8(ascii: "."))
            digits(&self, min(max(milliseconds, 0), 999), 3)
        }
        appendByte(UInt8(ascii: "Z"))
        if quoted { appendByte(UInt8(ascii: "\"")) }
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
