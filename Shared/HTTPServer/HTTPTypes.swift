import FoundationEssentials
import JSON
import Platform

/// An HTTP request as the router and handlers see it: fully read, size-bounded.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path, percent-decoded by libmicrohttpd, without the query string.
    public var path: String
    /// Query arguments, decoded.
    public var query: [String: String]
    /// Header fields with lower-cased names, in arrival order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Set by the server when `X-Request-Id` was absent or unusable.
    public var requestID: String

    public init(
        method: String, path: String, query: [String: String] = [:],
        headers: [(name: String, value: String)] = [], body: [UInt8] = [], requestID: String? = nil
    ) {
        self.method = method.uppercased()
        self.path = path
        self.query = query
        self.headers = headers.map { ($0.name.lowercased(), $0.value) }
        self.body = body
        self.requestID = requestID ?? HTTPRequest.newRequestID()
    }

    /// A request as the server reads it: `method` as sent (libmicrohttpd compares methods
    /// case-sensitively, as RFC 9110 §9.1 does), header names already lower-cased: nothing is
    /// normalised a second time.
    init(receivedMethod method: String, path: String, query: [String: String], lowercasedHeaders headers: [(name: String, value: String)], body: [UInt8], requestID: String) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        // Callers name headers in lower case almost always ("traceparent", "authorization"):
        // then no lower-cased copy is made (it was a per-request cost in profiles).
        header(lowercased: name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? name.lowercased() : name)
    }

    /// The first value of header `name`, which is already lower case (the server's own
    /// lookups on every request: no case check, no copy).
    func header(lowercased name: String) -> String? {
        for field in headers where field.name == name { return field.value }
        return nil
    }

    /// The credential of an `Authorization: Bearer …` header.
    public var bearerToken: String? {
        guard let auth = header("authorization") else { return nil }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingWhitespace()
        return token.isEmpty ? nil : token
    }

    /// A request id: the client's `X-Request-Id` when it is short and plain, else a new one.
    static func newRequestID() -> String {
        RandomUUID.keyed()
    }

    static func acceptableRequestID(_ s: String) -> Bool {
        s.utf8.count <= 64 && !s.isEmpty && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F || c == 0x2E
        }
    }
}

/// An HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }

    /// A JSON response: compact, members sorted by key, `/` not escaped, dates in ISO 8601
    /// (``JSONValueEncoder``).
    public static func json<T: Encodable>(_ value: T, status: Int = 200, headers: [(name: String, value: String)] = []) throws -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers,
            body: try JSONValueEncoder().encodeToBytes(value))
    }

    /// A JSON response written by the value itself (``JSONDirectEncodable``): the same bytes
    /// as the generic `json(_:status:headers:)`, without the encoder's tree (bodies written on
    /// every sign-in).
    public static func json<T: JSONDirectEncodable>(_ value: T, status: Int = 200, headers: [(name: String, value: String)] = []) throws -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: value.directJSONBytes)
    }

    /// A plain-text response.
    public static func text(_ value: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(value.utf8))
    }
}

extension HTTPRequest {
    /// The `Content-Type` without parameters, lower-cased ("" when absent).
    var mediaType: String {
        guard let value = header("content-type") else { return "" }
        let isSpace = { (c: UInt8) in c == 0x20 || c == 0x09 }
        let bytes = value.utf8.prefix { $0 != UInt8(ascii: ";") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        let type = String(decoding: bytes[first...last], as: UTF8.self)
        // Clients send it lower-case: a copy only when it is not.
        return type.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? type.lowercased() : type
    }

    /// Request bodies nested deeper than this are malformed (a ruleset's deepest condition
    /// is well inside it).
    public static let maximumJSONDepth = 64

    /// Decodes the JSON body as `T`.
    ///
    /// - Throws: ``HTTPError`` `unsupported_media_type` (415) when the body is not declared
    ///   JSON, `malformed_json` (400) when it is not strict JSON (``JSONParser``: a duplicate
    ///   member name is malformed), `invalid_field` (400) naming the field when it parses but
    ///   does not fit `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try jsonTree()
        return try Self.decoding { try JSONValueDecoder().decode(T.self, from: value) }
    }

    /// Decodes the JSON body as `T`, directly from the parsed tree where it fits
    /// (``JSONDirectDecodable``), else as ``decode(_:)`` does, with the same errors.
    public func decode<T: JSONDirectDecodable>(_ type: T.Type) throws -> T {
        let value = try jsonTree()
        return try Self.decoding { try JSONValueDecoder().decodeDirectly(T.self, from: value) }
    }

    /// The body's one strict parse (duplicate member names, lone surrogates, invalid UTF-8 and
    /// deep nesting refused): decoding reads its tree, no second parser to disagree with.
    private func jsonTree() throws -> JSONValue {
        let media = mediaType
        guard media == "application/json" || media.hasSuffix("+json") else {
            throw HTTPError(.unsupportedMediaType, detail: "The body must be application/json.")
        }
        guard !body.isEmpty else { throw HTTPError(.malformedJSON, detail: "The body is empty.") }
        do {
            return try JSONParser.parse(body, maximumDepth: Self.maximumJSONDepth)
        } catch {
            throw HTTPError(.malformedJSON, detail: "The body is not valid JSON: \(error.reason) at byte \(error.offset).")
        }
    }

    /// Runs `decode`, its errors as the problems ``decode(_:)`` documents.
    private static func decoding<T>(_ decode: () throws -> T) throws -> T {
        do {
            return try decode()
        } catch let error as DecodingError {
            throw HTTPError.from(decodingError: error)
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(.malformedJSON, detail: "The body could not be decoded.")
        }
    }
}
