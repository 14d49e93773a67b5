import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Platform
import Testing
@testable import HTTPServer

/// The real libmicrohttpd server on an ephemeral loopback port.
@Suite(.serialized) struct HTTPServerTests {
    func withServer(
        maxBody: Int = 1024, timeout: Duration = .seconds(5), _ body: (Int) async throws -> Void
    ) async throws {
        var r = Router()
        r.post("/echo") { request, _ in HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: request.body) }
        r.get("/slow") { _, _ in
            try await Task.sleep(for: .seconds(2))
            return .text("late")
        }
        r.get("/q") { request, _ in .text(request.query["a"] ?? "-") }
        let app = HTTPApplication(router: r, logger: Logger(label: "test", level: .critical))
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2, maxBodyBytes: maxBody, requestTimeout: timeout),
            logger: Logger(label: "test", level: .critical)
        ) { await app.respond(to: $0) }
        try server.start()
        do {
            try await body(server.boundPort)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func send(_ port: Int, _ method: String, _ path: String, body: [UInt8]? = nil) async throws -> (Int, [UInt8], HTTPURLResponse) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body)
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, Array(data), http)
    }

    @Test func echoesBodiesAndQueries() async throws {
        try await withServer { port in
            let payload = Array((0..<1000).map { UInt8($0 % 251) })
            let (status, body, _) = try await send(port, "POST", "/echo", body: payload)
            #expect(status == 200 && body == payload)
            let (_, q, _) = try await send(port, "GET", "/q?a=hello%20world")
            #expect(String(decoding: q, as: UTF8.self) == "hello world")
        }
    }

    @Test func oversizedBodiesAre413() async throws {
        try await withServer(maxBody: 100) { port in
            let (status, body, http) = try await send(port, "POST", "/echo", body: Array(repeating: 1, count: 5000))
            #expect(status == 413)
            #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/problem+json")
            #expect(String(decoding: body, as: UTF8.self).contains("payload_too_large"))
        }
    }

    @Test func slowHandlersTimeOutWith503() async throws {
        try await withServer(timeout: .milliseconds(200)) { port in
            let (status, body, _) = try await send(port, "GET", "/slow")
            #expect(status == 503)
            #expect(String(decoding: body, as: UTF8.self).contains("request_timeout"))
        }
    }

    @Test func manyConcurrentRequests() async throws {
        try await withServer { port in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<200 {
                    group.addTask { try await self.send(port, "GET", "/q?a=\(i)").0 }
                }
                for try await status in group { #expect(status == 200) }
            }
        }
    }

    @Test func shutdownWaitsForInFlightRequests() async throws {
        var r = Router()
        r.get("/work") { _, _ in
            try await Task.sleep(for: .milliseconds(300))
            return .text("done")
        }
        let app = HTTPApplication(router: r, logger: Logger(label: "test", level: .critical))
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: Logger(label: "test", level: .critical)) {
            await app.respond(to: $0)
        }
        try server.start()
        let port = server.boundPort
        let inFlight = Task { try await send(port, "GET", "/work") }
        try await Task.sleep(for: .milliseconds(100))
        await server.shutdown()
        let (status, body, _) = try await inFlight.value
        #expect(status == 200 && String(decoding: body, as: UTF8.self) == "done")
    }
}
