import Foundation
import Platform
import Testing
@testable import HTTPServer

/// The HTTP entry of W3C Trace Context: each request's span continues the caller's
/// `traceparent` (or starts a trace), handlers see it as `TraceContext.current`, its ids are in
/// the request's log metadata, and its span is recorded with the route template, never the path.
@Suite(.serialized) struct TraceContextHTTPTests {
    struct Seen: Codable {
        let traceparent: String?
        let parent: String?
        let state: String?
        let logTrace: String?
        let logSpan: String?
    }

    static let client: HTTPTestClient = {
        var r = Router()
        r.get("/v1/tenants/{tenant}/users/{username}/trace") { _, ctx in
            let current = TraceContext.current
            return try .json(
                Seen(
                    traceparent: current?.traceparent, parent: current?.parentSpanID, state: current?.traceState,
                    logTrace: ctx.logger[metadataKey: LogKey.traceID]?.description, logSpan: ctx.logger[metadataKey: LogKey.spanID]?.description))
        }
        return HTTPTestClient(HTTPApplication(router: r, logger: Logger(label: "test", level: .critical)))
    }()

    func seen(_ headers: [(name: String, value: String)]) async throws -> Seen {
        let r = await Self.client.execute("GET", "/v1/tenants/acme/users/jane.doe@example.org/trace", headers: headers)
        #expect(r.status == 200)
        return try JSONDecoder().decode(Seen.self, from: Data(r.body))
    }

    @Test func aRequestContinuesTheCallersTrace() async throws {
        let s = try await seen([("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("tracestate", "congo=t61rcWkgMzE")])
        let header = try #require(s.traceparent)
        let mine = try #require(TraceContext.Parent(parsing: header))
        #expect(mine.traceID == "0af7651916cd43dd8448eb211c80319c" && mine.spanID != "b7ad6b7169203331")
        #expect(s.parent == "b7ad6b7169203331" && s.state == "congo=t61rcWkgMzE")
        #expect(s.logTrace == mine.traceID && s.logSpan == mine.spanID)
    }

    @Test func withoutAUsableTraceparentARequestStartsATrace() async throws {
        for headers in [[], [("traceparent", "00-00000000000000000000000000000000-b7ad6b7169203331-01"), ("tracestate", "x=y")]] {
            let s = try await seen(headers)
            let header = try #require(s.traceparent)
            let mine = try #require(TraceContext.Parent(parsing: header))
            #expect(s.parent == nil && s.state == nil && mine.sampled)
            #expect(s.logTrace == mine.traceID)
        }
    }

    @Test func theServerSpanNamesTheRouteTemplateNotThePath() async throws {
        Tracer.shared.enable(capacity: 4096, batchSize: 4096)
        defer { Tracer.shared.disable() }
        let s = try await seen([("traceparent", "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")])
        let spans = Tracer.shared.drain(max: 10_000).filter { $0.context.traceID == "1af7651916cd43dd8448eb211c80319c" }
        let span = try #require(spans.first)
        #expect(spans.count == 1 && span.kind == .server && span.context.parentSpanID == "b7ad6b7169203331")
        #expect(span.context.traceparent == s.traceparent)
        #expect(span.name == "GET /v1/tenants/{tenant}/users/{username}/trace")
        let attributes = Dictionary(uniqueKeysWithValues: span.attributes.map { ($0.key, $0.value) })
        #expect(attributes["http.route"] == .string("/v1/tenants/{tenant}/users/{username}/trace"))
        #expect(attributes["http.response.status_code"] == .int(200) && attributes["http.request.method"] == .string("GET"))
        // Nothing of the path's username anywhere in the span.
        #expect(!"\(span)".contains("jane") && !span.isError && span.endNanos >= span.startNanos)
    }
}
