import FoundationEssentials
import JSON

/// A stable, machine-readable problem code, returned as `code` in problem+json bodies.
///
/// A struct rather than an enum so that services add codes without breaking callers.
public struct ProblemCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public let status: Int
    public let title: String

    public init(_ rawValue: String, status: Int, title: String) {
        self.rawValue = rawValue
        self.status = status
        self.title = title
    }

    public var description: String { rawValue }

    public static let malformedJSON = ProblemCode("malformed_json", status: 400, title: "Malformed JSON")
    public static let invalidField = ProblemCode("invalid_field", status: 400, title: "Invalid field")
    public static let badRequest = ProblemCode("bad_request", status: 400, title: "Bad request")
    public static let unauthorized = ProblemCode("unauthorized", status: 401, title: "Unauthorized")
    public static let forbidden = ProblemCode("forbidden", status: 403, title: "Forbidden")
    public static let notFound = ProblemCode("not_found", status: 404, title: "Not found")
    public static let tenantNotFound = ProblemCode("tenant_not_found", status: 404, title: "Tenant not found")
    public static let methodNotAllowed = ProblemCode("method_not_allowed", status: 405, title: "Method not allowed")
    public static let conflict = ProblemCode("conflict", status: 409, title: "Conflict")
    public static let payloadTooLarge = ProblemCode("payload_too_large", status: 413, title: "Payload too large")
    public static let unsupportedMediaType = ProblemCode("unsupported_media_type", status: 415, title: "Unsupported media type")
    public static let tooManyRequests = ProblemCode("too_many_requests", status: 429, title: "Too many requests")
    public static let internalError = ProblemCode("internal_error", status: 500, title: "Internal error")
    public static let unavailable = ProblemCode("service_unavailable", status: 503, title: "Service unavailable")
    public static let requestTimeout = ProblemCode("request_timeout", status: 503, title: "Request timed out")
}

/// An error that maps to an `application/problem+json` response (RFC 9457).
///
/// `detail` is shown to the client: it must never carry PII, secrets or SQL.
public struct HTTPError: Error, CustomStringConvertible, Sendable {
    public let code: ProblemCode
    public let detail: String?
    /// The JSON path of the offending field, for validation errors.
    public let field: String?
    public let headers: [(name: String, value: String)]
    public let file: String
    public let line: Int
    /// Why, for the operator: logged with a 5xx, never sent. Names kinds, hosts and codes only
    /// (never a URL's path, a body or a value).
    public let cause: String?

    public init(
        _ code: ProblemCode, detail: String? = nil, field: String? = nil,
        headers: [(name: String, value: String)] = [], cause: String? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.detail = detail
        self.field = field
        self.headers = headers
        self.cause = cause
        self.file = file
        self.line = line
    }

    public var description: String { "HTTPError(\(code.rawValue))" }

    /// Convenience for a validation failure of one field.
    public static func invalid(_ field: String, _ detail: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(.invalidField, detail: detail, field: field, file: file, line: line)
    }

    /// Maps a `DecodingError` to `invalid_field` naming the JSON path.
    public static func from(decodingError error: DecodingError) -> HTTPError {
        func path(_ ctx: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
            var parts = ctx.map { k in k.intValue.map { "[\($0)]" } ?? k.stringValue }
            if let key { parts.append(key.stringValue) }
            var s = ""
            for p in parts {
                if p.hasPrefix("[") { s += p } else { s += s.isEmpty ? p : ".\(p)" }
            }
            return s.isEmpty ? "$" : s
        }
        switch error {
        case .keyNotFound(let key, let ctx):
            let f = path(ctx.codingPath, key)
            return .invalid(f, "Field '\(f)' is required.")
        case .typeMismatch(let type, let ctx):
            let f = path(ctx.codingPath)
            return .invalid(f, "Field '\(f)' must be of type \(jsonTypeName(type)).")
        case .valueNotFound(let type, let ctx):
            let f = path(ctx.codingPath)
            return .invalid(f, "Field '\(f)' must be a \(jsonTypeName(type)), not null.")
        case .dataCorrupted(let ctx):
            let f = path(ctx.codingPath)
            return .invalid(f, "Field '\(f)' has an invalid value.")
        @unknown default:
            return HTTPError(.malformedJSON, detail: "The body could not be decoded.")
        }
    }

    private static func jsonTypeName(_ t: Any.Type) -> String {
        switch t {
        case is String.Type: "string"
        case is Int.Type, is Int64.Type, is Double.Type: "number"
        case is Bool.Type: "boolean"
        default:
            String(describing: t).hasPrefix("Array") ? "array" : "object"
        }
    }
}

/// An error from below the HTTP layer that knows its answer (the database being unreachable
/// is 503, not 500). The edge asks it before falling back to a logged 500; conformances live
/// where both modules are known (ServiceKit for the PostgreSQL pool).
public protocol HTTPErrorConvertible: Error {
    /// The problem to answer with, or nil for a plain 500.
    var httpError: HTTPError? { get }
}

/// The body of an `application/problem+json` response.
public struct ProblemDetails: Codable, Sendable, Equatable {
    public var type: String
    public var title: String
    public var status: Int
    public var code: String
    public var detail: String?
    public var field: String?
    public var requestId: String?

    public init(code: ProblemCode, detail: String?, field: String?, requestId: String?) {
        type = "urn:signet:problem:\(code.rawValue)"
        title = code.title
        status = code.status
        self.code = code.rawValue
        self.detail = detail
        self.field = field
        self.requestId = requestId
    }
}

extension HTTPResponse {
    /// A problem+json response for `error`.
    public static func problem(_ error: HTTPError, requestID: String?) -> HTTPResponse {
        let body = ProblemDetails(code: error.code, detail: error.detail, field: error.field, requestId: requestID)
        let data = (try? JSONValueEncoder().encodeToBytes(body)) ?? Array("{}".utf8)
        return HTTPResponse(
            status: error.code.status,
            headers: [("Content-Type", "application/problem+json")] + error.headers,
            body: data)
    }
}
