import FoundationEssentials
import Kafka
import Platform
import Schema

extension EventEnvelope {
    /// The CloudEvents Kafka binding, binary mode: attributes as `ce_*` headers, data as value.
    public func kafkaMessage(topic: String, key: String) -> KafkaOutgoingMessage {
        var headers: [(name: String, value: String)] = [
            (CloudEventHeader.id, id),
            (CloudEventHeader.source, source),
            (CloudEventHeader.type, type),
            (CloudEventHeader.specVersion, EventEnvelope.specVersion),
            (CloudEventHeader.time, Timestamp.format(time)),
            (CloudEventHeader.contentType, EventEnvelope.contentType),
        ]
        if let subject { headers.append((CloudEventHeader.subject, subject)) }
        if let traceparent { headers.append((CloudEventHeader.traceparent, traceparent)) }
        if let tracestate { headers.append((CloudEventHeader.tracestate, tracestate)) }
        return KafkaOutgoingMessage(topic: topic, key: key, value: data, headers: headers)
    }

    /// Reads a binary-mode CloudEvent from a Kafka record.
    ///
    /// - Throws: ``EventDecodingError`` when a required attribute is missing or unsupported.
    public init(record: KafkaRecord) throws {
        func required(_ name: String) throws -> String {
            guard let v = record.header(name), !v.isEmpty, v.utf8.count <= 512 else { throw EventDecodingError.missingAttribute(name) }
            return v
        }
        let spec = try required(CloudEventHeader.specVersion)
        guard spec == EventEnvelope.specVersion else { throw EventDecodingError.unsupportedSpecVersion(spec) }
        if let ct = record.header(CloudEventHeader.contentType), ct != EventEnvelope.contentType,
            ct.split(separator: ";").first.map({ $0.trimmingWhitespace() }) != EventEnvelope.contentType
        {
            throw EventDecodingError.unsupportedContentType(String(ct.prefix(64)))
        }
        let id = try required(CloudEventHeader.id)
        let source = try required(CloudEventHeader.source)
        let type = try required(CloudEventHeader.type)
        var time = Date()
        if let t = record.header(CloudEventHeader.time) {
            guard let parsed = Timestamp.parse(t) else { throw EventDecodingError.invalidData("ce_time") }
            time = parsed
        }
        // Tracing is best effort: a malformed traceparent is dropped (the consumer starts a new
        // trace), never a reason to dead-letter the event.
        let traceparent = record.header(CloudEventHeader.traceparent).flatMap { TraceContext.Parent(parsing: $0) != nil ? $0 : nil }
        let tracestate = traceparent == nil ? nil : record.header(CloudEventHeader.tracestate).flatMap { $0.utf8.count <= 512 ? $0 : nil }
        self.init(
            id: id, source: source, type: type, time: time, subject: record.header(CloudEventHeader.subject), data: record.value,
            traceparent: traceparent, tracestate: tracestate)
    }
}
