import Foundation
import Schema
import Testing

/// `schemas/events/cloudevent-kafka-binary.json` against `EventEnvelope` and `CloudEventHeader`.
@Suite struct EnvelopeSchemaTests {
    static func schema() throws -> JSONValue { try SchemaDocuments.eventSchema(SchemaDocuments.envelopeFile) }

    /// The Kafka headers of `envelope`, as the binary binding writes them
    /// (`EventEnvelope.kafkaMessage` in ServiceKit, which this target cannot import).
    static func headers(of envelope: EventEnvelope) -> JSONValue {
        var headers: [String: JSONValue] = [
            CloudEventHeader.id: .string(envelope.id),
            CloudEventHeader.source: .string(envelope.source),
            CloudEventHeader.type: .string(envelope.type),
            CloudEventHeader.specVersion: .string(EventEnvelope.specVersion),
            CloudEventHeader.time: .string(Timestamp.format(envelope.time)),
            CloudEventHeader.contentType: .string(EventEnvelope.contentType),
        ]
        if let subject = envelope.subject { headers[CloudEventHeader.subject] = .string(subject) }
        if let traceparent = envelope.traceparent { headers[CloudEventHeader.traceparent] = .string(traceparent) }
        if let tracestate = envelope.tracestate { headers[CloudEventHeader.tracestate] = .string(tracestate) }
        return .object(headers)
    }

    /// The service that publishes on each topic (requests to oob and erasure tallies come
    /// from several; one stands for them).
    static let publishers: [String: ServiceName] = [
        Topic.registration: .registration, Topic.authentication: .authentication, Topic.transaction: .transaction,
        Topic.oob: .oob, Topic.pii: .pii, Topic.deliveryRequests: .authentication, Topic.erasures: .pii,
        Topic.authenticationPolicy: .authentication, Topic.piiRequests: .registration,
    ]

    /// One envelope per catalog type, from the service that publishes on the payload's topic.
    static func envelopes(subject: String?) throws -> [EventEnvelope] {
        try EventCatalog.payloadTypes.map { type in
            let service = try #require(publishers[type.topic], "\(type.eventType): no publisher for \(type.topic)")
            return try Self.envelope(type, source: service.eventSource, subject: subject)
        }
    }

    private static func envelope<P: EventPayload>(_: P.Type, source: String, subject: String?) throws -> EventEnvelope {
        try EventEnvelope(P.fullExample, source: source, subject: subject, time: Date(timeIntervalSince1970: 1_764_000_000))
    }

    @Test func documentsEveryHeaderTheSwiftCodeNames() throws {
        let schema = try Self.schema()
        #expect(schema["$schema"] == EventSchemaTests.draft202012)
        #expect(schema["$id"] == .string(SchemaDocuments.idBase + SchemaDocuments.envelopeFile))
        let names = [
            CloudEventHeader.id, CloudEventHeader.source, CloudEventHeader.type, CloudEventHeader.specVersion,
            CloudEventHeader.time, CloudEventHeader.subject, CloudEventHeader.contentType,
            CloudEventHeader.traceparent, CloudEventHeader.tracestate, CloudEventHeader.deadLetterReason, CloudEventHeader.deadLetterGroup, CloudEventHeader.deadLetterOrigin,
        ]
        #expect(try #require(schema["properties"]).keys == names.sorted())
        #expect(schema["properties"]?[CloudEventHeader.specVersion]?["const"] == .string(EventEnvelope.specVersion))
        #expect(schema["properties"]?[CloudEventHeader.contentType]?["const"] == .string(EventEnvelope.contentType))
        // Everything the envelope always has is required; the subject is optional.
        let required = try #require(schema["required"]?.arrayValue).compactMap(\.stringValue)
        let always = [
            CloudEventHeader.id, CloudEventHeader.source, CloudEventHeader.type, CloudEventHeader.specVersion,
            CloudEventHeader.time, CloudEventHeader.contentType,
        ]
        #expect(required == always.sorted())
    }

    @Test(arguments: [String?.none, "demo", "demo/u_7f3a9c"])
    func envelopesOfEveryCatalogTypeValidate(subject: String?) throws {
        let validator = MiniJSONSchema(document: try Self.schema())
        for envelope in try Self.envelopes(subject: subject) {
            #expect(validator.validate(Self.headers(of: envelope)) == [], "\(envelope.type)")
        }
    }

    @Test func tracedEnvelopesValidate() throws {
        let validator = MiniJSONSchema(document: try Self.schema())
        var envelope = try #require(try Self.envelopes(subject: "demo").first)
        envelope.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        envelope.tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        #expect(validator.validate(Self.headers(of: envelope)) == [])
    }

    @Test func documentedExampleValidates() throws {
        let schema = try Self.schema()
        let example = try #require(schema["examples"]?.arrayValue?.first)
        #expect(MiniJSONSchema(document: schema).validate(example) == [])
    }

    @Test func serviceNamesMatchTheSourceAndGroupPatterns() throws {
        let validator = MiniJSONSchema(document: try Self.schema())
        let base = try #require(try Self.envelopes(subject: "demo").first)
        for service in ServiceName.allCases {
            var headers = Self.headers(of: base).setting(CloudEventHeader.source, to: .string(service.eventSource))
            headers = headers.setting(CloudEventHeader.deadLetterGroup, to: .string(service.consumerGroup))
            headers = headers.setting(CloudEventHeader.deadLetterReason, to: .string("invalid event data: revision"))
            headers = headers.setting(CloudEventHeader.deadLetterOrigin, to: .string("\(Topic.registration)/0/42"))
            #expect(validator.validate(headers) == [], "\(service)")
        }
    }

    /// A header set the schema must reject, with the one failure it must report.
    struct RejectedHeaders: Sendable, CustomTestStringConvertible {
        let name: String
        let mutate: @Sendable (JSONValue) -> JSONValue
        let path: String
        let keyword: String
        var testDescription: String { name }

        init(_ name: String, _ path: String, _ keyword: String, _ mutate: @escaping @Sendable (JSONValue) -> JSONValue) {
            self.name = name
            self.mutate = mutate
            self.path = path
            self.keyword = keyword
        }
    }

    static let rejected: [RejectedHeaders] = [
        .init("no ce_specversion", "$.ce_specversion", "required") { $0.setting("ce_specversion", to: nil) },
        .init("ce_specversion 0.3", "$.ce_specversion", "const") { $0.setting("ce_specversion", to: .string("0.3")) },
        .init("no ce_id", "$.ce_id", "required") { $0.setting("ce_id", to: nil) },
        .init("empty ce_id", "$.ce_id", "minLength") { $0.setting("ce_id", to: .string("")) },
        .init("foreign ce_source", "$.ce_source", "pattern") { $0.setting("ce_source", to: .string("/acme/billing")) },
        .init("unversioned ce_type", "$.ce_type", "pattern") {
            $0.setting("ce_type", to: .string("signet.registration.tenant.upserted"))
        },
        .init("ce_time not a date", "$.ce_time", "format") { $0.setting("ce_time", to: .string("yesterday")) },
        .init("subject with a space", "$.ce_subject", "pattern") { $0.setting("ce_subject", to: .string("demo/alice smith")) },
        .init("XML content", "$[\"content-type\"]", "const") { $0.setting("content-type", to: .string("application/xml")) },
        .init("ce_traceparent in upper case", "$.ce_traceparent", "pattern") {
            $0.setting("ce_traceparent", to: .string("00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"))
        },
        .init("non-string header", "$.traceparent", "type") { $0.setting("traceparent", to: .number(1)) },
        .init("unknown DLQ group", "$.signet_dlq_group", "pattern") { $0.setting("signet_dlq_group", to: .string("acme")) },
        .init("DLQ origin without offset", "$.signet_dlq_origin", "pattern") {
            $0.setting("signet_dlq_origin", to: .string("signet.registration/0"))
        },
        .init("ce_id over 512", "$.ce_id", "maxLength") { $0.setting("ce_id", to: .string(String(repeating: "a", count: 513))) },
    ]

    @Test(arguments: rejected)
    func invalidHeadersAreRejected(_ c: RejectedHeaders) throws {
        let validator = MiniJSONSchema(document: try Self.schema())
        let base = Self.headers(of: try #require(try Self.envelopes(subject: "demo").first))
        #expect(validator.validate(base) == [])
        let failures = validator.validate(c.mutate(base))
        #expect(failures.map(\.path) == [c.path], "\(failures)")
        #expect(failures.map(\.keyword) == [c.keyword], "\(failures)")
    }

    @Test func extraStringHeadersAreAllowed() throws {
        let validator = MiniJSONSchema(document: try Self.schema())
        let base = Self.headers(of: try #require(try Self.envelopes(subject: nil).first))
        #expect(validator.validate(base.setting("traceparent", to: .string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))) == [])
    }
}
