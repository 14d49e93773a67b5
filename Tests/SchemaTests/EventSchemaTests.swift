import Foundation
import Schema
import Testing

/// A payload type of ``EventCatalog`` as a test argument, shown by its event type.
struct PayloadType: Sendable, CustomTestStringConvertible {
    let type: any EventPayload.Type
    var testDescription: String { type.eventType }

    static let all = EventCatalog.payloadTypes.map(PayloadType.init)

    /// `fullExample` and `minimalExample` as they go into Kafka records.
    func exampleJSON() throws -> (full: JSONValue, minimal: JSONValue) { try type.exampleJSON() }

    /// Whether a consumer accepts the record value: decodes it and passes `validate()`.
    func consumerAccepts(_ value: JSONValue) -> Bool { type.consumerAccepts(value) }
}

extension EventPayload {
    /// `fullExample` and `minimalExample` as they go into Kafka records.
    static func exampleJSON() throws -> (full: JSONValue, minimal: JSONValue) {
        (try SchemaDocuments.eventJSON(fullExample), try SchemaDocuments.eventJSON(minimalExample))
    }

    /// Whether a consumer accepts the record value: decodes as `Self` and passes `validate()`.
    static func consumerAccepts(_ value: JSONValue) -> Bool {
        do {
            try EventCoding.decode(Self.self, from: value.jsonBytes).validate()
            return true
        } catch {
            return false
        }
    }
}

/// `schemas/events/<eventType>.json` against the Swift payload types of the `Schema` module.
@Suite struct EventSchemaTests {
    static let draft202012 = JSONValue.string("https://json-schema.org/draft/2020-12/schema")

    @Test(arguments: PayloadType.all)
    func documentExistsAndNamesItsType(_ payload: PayloadType) throws {
        let p = payload.type
        #expect(p.schemaFile == "\(p.eventType).json")
        let schema = try SchemaDocuments.eventSchema(p.schemaFile)
        #expect(schema["$schema"] == Self.draft202012)
        #expect(schema["$id"] == .string(SchemaDocuments.idBase + p.schemaFile))
        #expect(schema["title"] == .string(p.eventType))
        #expect(schema["description"]?.stringValue?.isEmpty == false)
        #expect(schema["type"] == .string("object"))
        #expect(schema["additionalProperties"] == .bool(false))
        #expect(schema["x-signet-topic"] == .string(p.topic))
    }

    @Test(arguments: PayloadType.all)
    func fullExampleHasExactlyTheDocumentedProperties(_ payload: PayloadType) throws {
        let schema = try SchemaDocuments.eventSchema(payload.type.schemaFile)
        let properties = try #require(schema["properties"])
        #expect(try payload.exampleJSON().full.keys == properties.keys)
    }

    @Test(arguments: PayloadType.all)
    func minimalExampleHasExactlyTheRequiredProperties(_ payload: PayloadType) throws {
        let schema = try SchemaDocuments.eventSchema(payload.type.schemaFile)
        let required = try #require(schema["required"]?.arrayValue).compactMap(\.stringValue)
        #expect(try payload.exampleJSON().minimal.keys == required.sorted())
        #expect(required == required.sorted(), "keep `required` sorted, as the encoder sorts keys")
    }

    @Test(arguments: PayloadType.all)
    func examplesValidate(_ payload: PayloadType) throws {
        let schema = try SchemaDocuments.eventSchema(payload.type.schemaFile)
        let validator = MiniJSONSchema(document: schema)
        let (full, minimal) = try payload.exampleJSON()
        #expect(validator.validate(full) == [])
        #expect(validator.validate(minimal) == [])
        #expect(payload.consumerAccepts(full))
        #expect(payload.consumerAccepts(minimal))
        // The example printed in the document is the Swift one, so readers see the real thing.
        #expect(schema["examples"]?.arrayValue?.first == full)
    }

    @Test(arguments: PayloadType.all)
    func droppingARequiredPropertyIsRejected(_ payload: PayloadType) throws {
        let schema = try SchemaDocuments.eventSchema(payload.type.schemaFile)
        let validator = MiniJSONSchema(document: schema)
        let full = try payload.exampleJSON().full
        let required = try #require(schema["required"]?.arrayValue).compactMap(\.stringValue)
        try #require(!required.isEmpty)
        for key in required {
            let failures = validator.validate(full.setting(key, to: nil))
            #expect(failures.contains { $0.keyword == "required" && $0.path == "$.\(key)" }, "\(key): \(failures)")
            #expect(!payload.consumerAccepts(full.setting(key, to: nil)), "Swift decodes without \(key)")
        }
    }

    @Test(arguments: PayloadType.all)
    func anUnknownPropertyIsRejected(_ payload: PayloadType) throws {
        let validator = MiniJSONSchema(document: try SchemaDocuments.eventSchema(payload.type.schemaFile))
        let mutated = try payload.exampleJSON().full.setting("unexpected", to: .string("x"))
        let failures = validator.validate(mutated)
        #expect(failures == [
            MiniJSONSchema.Failure(path: "$.unexpected", keyword: "additionalProperties", message: "unknown property 'unexpected'")
        ])
    }

    @Test(arguments: PayloadType.all)
    func aValueOfTheWrongTypeIsRejected(_ payload: PayloadType) throws {
        let validator = MiniJSONSchema(document: try SchemaDocuments.eventSchema(payload.type.schemaFile))
        let full = try payload.exampleJSON().full
        for (key, value) in try #require(full.objectValue) {
            let wrong = Self.wrongType(for: value)
            let failures = validator.validate(full.setting(key, to: wrong))
            #expect(failures.contains { $0.keyword == "type" && $0.path == "$.\(key)" }, "\(key) = \(wrong): \(failures)")
            #expect(!payload.consumerAccepts(full.setting(key, to: wrong)), "Swift decodes \(key) = \(wrong)")
            // And inside arrays: an element of the wrong type.
            if case .array(let elements) = value, let first = elements.first {
                let mutated = full.setting(key, to: .array([Self.wrongType(for: first)] + elements.dropFirst()))
                let failures = validator.validate(mutated)
                #expect(failures.contains { $0.keyword == "type" && $0.path == "$.\(key)[0]" }, "\(key)[0]: \(failures)")
                #expect(!payload.consumerAccepts(mutated), "Swift decodes \(key)[0] of the wrong type")
            }
        }
    }

    /// A value no Swift property of `value`'s type would decode from.
    static func wrongType(for value: JSONValue) -> JSONValue {
        switch value {
        case .string: .number(42)
        case .number: .string("1")
        case .bool: .string("true")
        case .array: .object([:])
        case .object: .array([])
        case .null: .number(0)
        }
    }

    @Test func everyPayloadDocumentIsInTheCatalog() throws {
        let files = try SchemaDocuments.files(in: SchemaDocuments.eventsDirectory, withExtension: "json")
            .filter { $0 != SchemaDocuments.envelopeFile }
        let catalog = EventCatalog.payloadTypes.map { $0.schemaFile }.sorted()
        #expect(files == catalog, "orphan documents: \(Set(files).subtracting(catalog).sorted())")
        #expect(Set(catalog).count == catalog.count, "two catalog types share a document")
    }

    @Test func readmeListsTopicsDocumentsAndDeadLetterHeaders() throws {
        let readme = String(
            decoding: try SchemaDocuments.read(SchemaDocuments.eventsDirectory.appendingPathComponent("README.md")),
            as: UTF8.self)
        let expected = Topic.all + EventCatalog.payloadTypes.map { $0.schemaFile } + [SchemaDocuments.envelopeFile] + [
            CloudEventHeader.deadLetterReason, CloudEventHeader.deadLetterGroup, CloudEventHeader.deadLetterOrigin,
            CloudEventHeader.id, CloudEventHeader.source, CloudEventHeader.type, CloudEventHeader.specVersion,
            CloudEventHeader.time, CloudEventHeader.subject, CloudEventHeader.contentType,
        ]
        for name in expected {
            #expect(readme.contains("`\(name)`"), "README.md does not mention `\(name)`")
        }
    }
}
