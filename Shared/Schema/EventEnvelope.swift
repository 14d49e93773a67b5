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
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// Parses RFC 3339 with or without fractional seconds.
    public static func parse(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
