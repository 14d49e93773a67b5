import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Platform
import Synchronization
import Testing
@testable import HTTPServer

/// Routes that answer at once (``ImmediateHandler``): the server answers them on the receiving
/// thread without a task, with what ``HTTPApplication/respond(to:)`` would have answered.
@Suite(.serialized) struct ImmediateRouteTests {
    /// "task" when the handler runs inside a Swift task, "no task" otherwise.
    static func taskState() -> String { withUnsafeCurrentTask { $0 == nil ? "no task" : "task" } }

    static func application(registry: MetricsRegistry? = nil) -> HTTPApplication {
        var r = GuardedRouter()
        r.getOpen("/now", immediate: { _, _ in .text(taskState()) })
        r.getOpen("/now/{tenant}", immediate: { _, context in .text(context.tenant ?? "-") })
        r.getOpen("/refuse", immediate: { _, _ in throw HTTPError(.invalidPath, detail: "refused at once") })
        r.getOpen("/crash", immediate: { _, _ in
            struct Secret: Error { let password = "hunter2" }
            throw Secret()
        })
        r.getOpen("/metrics", immediate: { _, _ in .text(taskState()) })
        r.get("/later", .open) { _, _ in .text(taskState()) }
        let tenant = HTTPApplication.ParameterCheck(requirement: "lower-case letters") { value in
            value.unicodeScalars.allSatisfy { ("a"..."z").contains($0) }
        }
        return HTTPApplication(router: r.router, logger: Logger(label: "test", level: .critical), parameterChecks: ["tenant": tenant])
    }

    @Test func onlyImmediateRoutesAreAnsweredImmediately() async throws {
        let app = Self.application()
        for path in ["/later", "/nowhere", "/now/"] {
            #expect(app.respondImmediately(to: HTTPRequest(method: "GET", path: path)) == nil, "\(path)")
        }
        // Another method on an immediate route's path: 405 from the ordinary path.
        #expect(app.respondImmediately(to: HTTPRequest(method: "POST", path: "/now")) == nil)
        #expect(await app.respond(to: HTTPRequest(method: "POST", path: "/now")).status == 405)
        let plain = Router()
        #expect(!plain.hasImmediateRoutes)
        #expect(app.router.hasImmediateRoutes)
    }

    /// The same answer either way (status, body, content type, request id), errors and refused
    /// parameters included; only where it runs differs (here both run in this test's task; the
    /// server test below shows the immediate one runs in none).
    @Test func theImmediateAnswerIsTheOrdinaryOne() async throws {
        let app = Self.application()
        let cases: [(path: String, status: Int, code: String?)] = [
            ("/now", 200, nil), ("/now/acme", 200, nil), ("/now/ACME", 400, "invalid_field"), ("/refuse", 400, "invalid_path"),
            ("/crash", 500, "internal_error"),
        ]
        for c in cases {
            let request = HTTPRequest(method: "GET", path: c.path)
            let immediate = try #require(app.respondImmediately(to: request), "\(c.path)")
            let ordinary = await app.respond(to: request)
            #expect(immediate.status == c.status && ordinary.status == c.status, "\(c.path)")
            #expect(immediate.header("X-Request-Id") == request.requestID)
            #expect(immediate.header("Content-Type") == ordinary.header("Content-Type"))
            if let code = c.code {
                #expect(try problem(immediate).code == code)
                #expect(!String(decoding: immediate.body, as: UTF8.self).contains("hunter2"))
            } else {
                #expect(immediate.body == ordinary.body)
            }
        }
        let head = try #require(app.respondImmediately(to: HTTPRequest(method: "HEAD", path: "/now")))
        #expect(head.status == 200 && head.body.isEmpty)
    }

    /// Through the real server: an immediate route never reaches the task responder, every other
    /// request does; the probes' listener answers them the same way.
    @Test func theServerAnswersImmediateRoutesWithoutATask() async throws {
        let app = Self.application()
        let tasks = Atomic<Int>(0)
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        configuration.healthPort = 0
        let server = HTTPServer(
            configuration: configuration, logger: Logger(label: "test", level: .critical), immediate: { app.respondImmediately(to: $0) }
        ) { request in
            tasks.wrappingAdd(1, ordering: .relaxed)
            return await app.respond(to: request)
        }
        try server.start()
        func get(_ path: String, port: Int? = nil) async throws -> (Int, String) {
            let url = URL(string: "http://127.0.0.1:\(port ?? server.boundPort)\(path)")!
            let (data, response) = try await URLSession.shared.data(from: url)
            return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
        }
        do {
            for _ in 0..<5 {
                let (status, body) = try await get("/now")
                #expect(status == 200 && body == "no task")
            }
            #expect(try await get("/refuse").0 == 400)
            #expect(tasks.load(ordering: .relaxed) == 0)
            let (status, body) = try await get("/later")
            #expect(status == 200 && body == "task")
            #expect(try await get("/nowhere").0 == 404)
            #expect(tasks.load(ordering: .relaxed) == 2)
            // The probes' listener answers a probe path that answers at once the same way; any
            // other path, /now included, is refused there (404, by its own task responder,
            // before the service's is asked).
            let (probeStatus, probeBody) = try await get("/metrics", port: server.healthPort)
            #expect(probeStatus == 200 && probeBody == "no task")
            #expect(try await get("/now", port: server.healthPort).0 == 404)
            #expect(tasks.load(ordering: .relaxed) == 2)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}
