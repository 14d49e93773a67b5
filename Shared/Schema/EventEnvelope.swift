import FoundationEssentials
import Platform
import JSON

/// A CloudEvents 1.0 event as Signet carries it over Kafka in binary mode: the attributes in
/// `ce_*` headers, the JSON `data` as the message value.
public struct EventEnvelope: Sendable, Equatable {
    public static let specVersion = "1.0"
    public static let contentType = "application/json"

    /// Unique per event; consumers deduplicate on it.
    public var id: String
    /// The producing service, e.g. `/signet/registration`.
    public var source: String
    /// e.g. `signet.registration.tenant.upserted.v1`.
    public var type: String
    public var time: Date
    /// What the event is about: `tenant` or `tenant/user-reference` (never a username).
    public var subject: String?
    /// The JSON payload.
    public var data: [UInt8]
    /// The CloudEvents Distributed Tracing extension: the W3C `traceparent` of the span that
    /// produced the event (the outbox's producer span), and the trace's `tracestate`. Consumers
    /// continue the trace from it. Nil for an event produced outside any traced work.
    public var traceparent: String?
    public var tracestate: String?

    /// `id` defaults to ``RandomUUID/keyed()``: CloudEvents asks only that `source` + `id` be
    /// unique, the ids are not secrets, and one is made on every sign-in (two `getrandom(2)`
    /// calls each with ``RandomUUID/string()``).
    public init(
        id: String = RandomUUID.keyed(), source: String, type: String, time: Date = Date(), subject: String?, data: [UInt8],
        traceparent: String? = nil, tracestate: String? = nil
    ) {
        self.id = id
        self.source = source
        self.type = type
        self.time = time
        self.subject = subject
        self.data = data
        self.traceparent = traceparent
        self.tracestate = tracestate
    }

    /// Wraps a payload, encoding it as JSON.
    public init<P: EventPayload>(_ payload: P, source: String, subject: String?, id: String = RandomUUID.keyed(), time: Date = Date()) throws {
        self.init(id: id, source: source, type: P.eventType, time: time, subject: subject, data: try EventCoding.encode(payload))
    }

    /// Decodes the payload as `P`, checking the type first.
    public func decode<P: EventPayload>(_: P.Type) throws -> P {
        guard type == P.eventType else { throw EventDecodingError.wrongType(expected: P.eventType, actual: type) }
        return try EventCoding.decode(P.self, from: data)
    }
}

/// Why an incoming event could not be used. Descriptions name fields, never values.
public enum EventDecodingError: Error, CustomStringConvertible, Equatable {
    case missingAttribute(String)
    case unsupportedSpecVersion(String)
    case unsupportedContentType(String)
    case wrongType(expected: String, actual: String)
    case unknownType(String)
    case invalidData(String)

    public var description: String {
        switch self {
        case .missingAttribute(let a): "missing CloudEvents attribute \(a)"
        case .unsupportedSpecVersion(let v): "unsupported specversion \(v)"
        case .unsupportedContentType(let c): "unsupported content type \(c)"
        case .wrongType(let e, let a): "expected event type \(e), got \(a)"
        case .unknownType(let t): "unknown event type \(t)"
        case .invalidData(let d): "invalid event data: \(d)"
        }
    }
}

/// JSON coding shared by every event payload: sorted keys, ISO 8601 dates, read by the strict
/// parser (``JSONValueEncoder``, ``JSONValueDecoder``, as HTTP bodies are).
public enum EventCoding {
    /// Event payloads are shallow; deeper is invalid data.
    static let maximumDepth = 32

    /// The payload's compact JSON: written by the payload itself when it is
    /// ``JSONDirectEncodable`` (the same bytes, see that protocol), else by the generic encoder.
    public static func encode<P: Encodable>(_ payload: P) throws -> [UInt8] {
        if let direct = payload as? any JSONDirectEncodable { return direct.directJSONBytes }
        return try JSONValueEncoder().encodeToBytes(payload)
    }

    public static func decode<P: Decodable>(_: P.Type, from data: [UInt8]) throws -> P {
        do {
            return try JSONValueDecoder().decode(P.self, from: data, maximumDepth: maximumDepth)
        } catch let DecodingError.keyNotFound(key, ctx) {
            throw EventDecodingError.invalidData("missing \((ctx.codingPath + [key]).map(\.stringValue).joined(separator: "."))")
        } catch let DecodingError.typeMismatch(_, ctx) {
            throw EventDecodingError.invalidData("wrong type at \(ctx.codingPath.map(\.stringValue).joined(separator: "."))")
        } catch let DecodingError.valueNotFound(_, ctx) {
            throw EventDecodingError.invalidData("null at \(ctx.codingPath.map(\.stringValue).joined(separator: "."))")
        } catch {
            throw EventDecodingError.invalidData("not a JSON object of the expected shape")
        }
    }
}

/// A payload carried by a Signet event.
public protocol EventPayload: Codable, Sendable, Equatable {
    /// The CloudEvents `type`, versioned: `signet.<service>.<entity>.<verb>.v<N>`.
    static var eventType: String { get }
    /// The topic it is published on.
    static var topic: String { get }
    /// The file under `schemas/events/` that documents it.
    static var schemaFile: String { get }
    /// An instance with every optional field set (used by the schema agreement tests).
    static var fullExample: Self { get }
    /// An instance with only the required fields set.
    static var minimalExample: Self { get }
    /// Checks what the type system cannot (formats, lengths); throws ``EventDecodingError``.
    func validate() throws
}

extension EventPayload {
    public static var schemaFile: String { "\(eventType).json" }
}

/// RFC 3339 timestamps in UTC with milliseconds, as used in `ce_time`.
///
/// What Signet writes (`2026-11-29T12:34:56.123Z`) is written and read by hand here
/// (``JSONWriter/millisecondTimestamp(_:)``, ``CivilDate``): Foundation's ISO 8601 style was a
/// third of the CPU an event consumer spent on an event it skips. Every other text goes to
/// Foundation's parser as before (offsets, other fraction lengths, and its leniencies: it rolls
/// `02-30` over into March and ignores what follows a `Z`), so what is accepted is unchanged;
/// a test compares the two over random times and the edge cases.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        guard JSONWriter.writesByHand(date) else { return Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date) }
        return JSONWriter.millisecondTimestamp(date)
    }

    /// Parses RFC 3339 with or without fractional seconds.
    public static func parse(_ text: String) -> Date? {
        if let date = parseCanonical(text) { return date }
        return (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.mmmZ` with every field in range (the day
    /// in its month, no leap second), else nil (for Foundation to decide).
    static func parseCanonical(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 20 || b.count == 24, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A,
                b[b.count - 1] == 0x5A, b.count == 20 || b[19] == 0x2E
            else { return nil }
            func number(_ at: Int, _ length: Int) -> Int? {
                var value = 0
                for k in at..<(at + length) {
                    let digit = b[k] &- 0x30
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
                let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
                let millisecond = b.count == 24 ? number(20, 3) : 0,
                year >= 1900, (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
                hour < 24, minute < 60, second < 60
            else { return nil }
            let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
            let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
            return Date(timeIntervalSince1970: Double(seconds) + Double(millisecond) / 1000)
        }
    }
}
