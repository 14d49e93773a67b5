import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPServer
import JSON
import Schema

/// Which credential the console presents to a service. The credentials themselves stay in the
/// upstream: routes name one, they never hold or forward a token.
public enum UpstreamCredential: Sendable, Equatable {
    /// None: the public client API (sign-in ceremonies, tenant descriptions).
    case none
    /// The operator's admin token (`/v1/admin/…`).
    case admin
    /// The RP API key of the operators' tenant (its own passkey registrations).
    case operatorsRelyingParty
    /// The console's own RP API key of a tenant (``ConsoleTenantKeys``), for the RP API's
    /// user routes; registered through the admin API before its first use.
    case tenantRelyingParty(String)
}

/// A service's answer, as the console passes it on.
public struct UpstreamResponse: Sendable {
    public let status: Int
    public let contentType: String?
    public let body: [UInt8]

    public init(status: Int, contentType: String?, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// The body decoded as `T` by the strict parser, when the call succeeded.
    ///
    /// - Throws: the service's own problem (4xx, passed on with its code) or 503
    ///   `service_unavailable` for anything else.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try requireSuccess()
        guard let value = try? JSONValueDecoder().decode(T.self, from: body, maximumDepth: HTTPRequest.maximumJSONDepth) else {
            throw HTTPError(.unavailable, detail: "A service this request needs answered something unexpected; retry.")
        }
        return value
    }

    /// - Throws: as ``decode(_:)`` for a status outside 2xx.
    public func requireSuccess() throws {
        if (200..<300).contains(status) { return }
        if (400..<500).contains(status), let problem = try? JSONValueDecoder().decode(ProblemEcho.self, from: body) {
            throw HTTPError(ProblemCode(problem.code, status: status, title: problem.title ?? "Refused"), detail: problem.detail, field: problem.field)
        }
        throw HTTPError(.unavailable, detail: "A service this request needs is unavailable; retry.")
    }

    /// The answer as the console's own response: status, JSON or problem+json body, nothing
    /// else of the service's headers.
    public var asResponse: HTTPResponse {
        var headers: [(name: String, value: String)] = [("Cache-Control", "no-store")]
        if let contentType, !body.isEmpty { headers.append(("Content-Type", contentType)) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    private struct ProblemEcho: Decodable {
        let code: String
        let title: String?
        let detail: String?
        let field: String?
    }
}

/// How the console reaches the services' public admin and RP APIs. Production sends HTTP
/// (``HTTPUpstream``); the in-process tests answer from a table.
public protocol ConsoleUpstream: Sendable {
    /// Sends `method path` to `service` with `credential` and a JSON `body`.
    ///
    /// - Throws: 503 `service_unavailable` when the service cannot be reached.
    func send(_ service: ServiceName, _ method: String, _ path: String, credential: UpstreamCredential, body: [UInt8]?) async throws -> UpstreamResponse
}

/// The services over HTTP, with the admin token and the operators' tenant's RP key.
public struct HTTPUpstream: ConsoleUpstream {
    let baseURLs: [ServiceName: String]
    let adminToken: String
    let operatorsKey: String
    let timeout: TimeInterval
    let session: URLSession

    public init(baseURLs: [ServiceName: String], adminToken: String, operatorsKey: String, timeout: TimeInterval = 10) {
        self.baseURLs = baseURLs
        self.adminToken = adminToken
        self.operatorsKey = operatorsKey
        self.timeout = timeout
        // No cookie jar and no cache: nothing of one operator's calls may reach another's.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    public func send(_ service: ServiceName, _ method: String, _ path: String, credential: UpstreamCredential, body: [UInt8]?) async throws -> UpstreamResponse {
        let unavailable = HTTPError(.unavailable, detail: "A service this request needs is unavailable; retry.")
        guard let base = baseURLs[service], let url = URL(string: base + path) else { throw unavailable }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        switch credential {
        case .none: break
        case .admin: request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
        case .operatorsRelyingParty: request.setValue("Bearer \(operatorsKey)", forHTTPHeaderField: "Authorization")
        case .tenantRelyingParty(let tenant):
            request.setValue("Bearer \(ConsoleTenantKeys.key(for: tenant, secret: operatorsKey))", forHTTPHeaderField: "Authorization")
        }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body)
        }
        guard let (data, response) = try? await session.data(for: request), let http = response as? HTTPURLResponse else { throw unavailable }
        return UpstreamResponse(status: http.statusCode, contentType: http.value(forHTTPHeaderField: "Content-Type"), body: Array(data))
    }
}
