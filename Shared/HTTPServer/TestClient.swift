import FoundationEssentials
import Platform

/// Drives an ``HTTPApplication`` in process, through the same responder production uses.
public struct HTTPTestClient: Sendable {
    public let application: HTTPApplication

    public init(_ application: HTTPApplication) { self.application = application }

    /// Sends a request and returns the response.
    public func execute(
        _ method: String, _ path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []
    ) async -> HTTPResponse {
        var query: [String: String] = [:]
        var p = path
        if let q = path.firstIndex(of: "?") {
            p = String(path[..<q])
            for pair in path[path.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                query[PercentEncoding.decode(kv[0]) ?? String(kv[0])] =
                    kv.count > 1 ? (PercentEncoding.decode(kv[1]) ?? String(kv[1])) : ""
            }
        }
        return await application.respond(to: HTTPRequest(method: method, path: p, query: query, headers: headers, body: body))
    }

    /// Sends a JSON body.
    public func execute(
        _ method: String, _ path: String, headers: [(name: String, value: String)] = [], json: String
    ) async -> HTTPResponse {
        await execute(method, path, headers: headers + [("Content-Type", "application/json")], body: Array(json.utf8))
    }
}
