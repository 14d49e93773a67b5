import Foundation
import HTTPServer
import Schema

/// Finds and reads the language-neutral documents under `schemas/`.
enum SchemaDocuments {
    /// The checkout: this file is `Tests/SchemaTests/SchemaDocuments.swift`, three levels down.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let eventsDirectory = repositoryRoot.appendingPathComponent("schemas/events")
    static let openAPIDirectory = repositoryRoot.appendingPathComponent("schemas/openapi")

    /// The headers document, the one file in `schemas/events` that is not a payload schema.
    static let envelopeFile = "cloudevent-kafka-binary.json"
    static let idBase = "https://signet.dev/schemas/events/"

    struct MissingDocument: Error, CustomStringConvertible {
        let path: String
        var description: String { "missing document \(path)" }
    }

    static func read(_ url: URL) throws -> Data {
        guard FileManager.default.fileExists(atPath: url.path) else { throw MissingDocument(path: url.path) }
        return try Data(contentsOf: url)
    }

    /// `schemas/events/<file>` as JSON.
    static func eventSchema(_ file: String) throws -> JSONValue {
        try JSONValue(json: read(eventsDirectory.appendingPathComponent(file)))
    }

    /// `schemas/openapi/<service>.yaml`, read with ``MiniYAML``.
    static func openAPIDocument(_ service: ServiceName) throws -> JSONValue {
        let data = try read(openAPIDirectory.appendingPathComponent("\(service.rawValue).yaml"))
        return try JSONValue(any: MiniYAML.parse(String(decoding: data, as: UTF8.self)))
    }

    /// File names in a directory with the given extension, sorted.
    static func files(in directory: URL, withExtension ext: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".\(ext)") }.sorted()
    }

    // MARK: - Encoding as the services do

    /// An event payload as it goes into a Kafka record (`EventCoding.encode`).
    static func eventJSON(_ payload: some EventPayload) throws -> JSONValue {
        try JSONValue(json: EventCoding.encode(payload))
    }

    /// A wire type as the HTTP server encodes it (`HTTPResponse.json`).
    static func wireJSON(_ value: some Encodable) throws -> JSONValue {
        try JSONValue(json: HTTPResponse.json(value).body)
    }

    /// Reads JSON back as `T` the way the services decode request bodies (`HTTPRequest.decode`).
    static func decodeWire<T: Decodable>(_: T.Type, from value: JSONValue) throws -> T {
        let data = try JSONSerialization.data(withJSONObject: value.anyValue, options: [.fragmentsAllowed])
        let request = HTTPRequest(method: "POST", path: "/", headers: [("Content-Type", "application/json")], body: Array(data))
        return try request.decode(T.self)
    }
}

extension JSONValue {
    /// Back to the `Any` tree `JSONSerialization` writes.
    var anyValue: Any {
        switch self {
        case .null: NSNull()
        case .bool(let b): b
        case .number(let n): n.rounded() == n && abs(n) < 9e15 ? Int(n) as Any : n as Any
        case .string(let s): s
        case .array(let a): a.map(\.anyValue)
        case .object(let o): o.mapValues(\.anyValue)
        }
    }

    /// The bytes `JSONSerialization` writes for this value (for decoding it as a Swift type).
    var jsonBytes: [UInt8] {
        get throws { Array(try JSONSerialization.data(withJSONObject: anyValue, options: [.fragmentsAllowed])) }
    }
}
