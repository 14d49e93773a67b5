import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ServiceKit

@Suite struct LivenessTests {
    /// The pre-encoded `/healthz` answer is what encoding `HealthStatus` per request gave, on
    /// every call (the same bytes, status and content type).
    @Test func theEncodedOnceAnswerEqualsThePerRequestOne() async throws {
        let handler = HealthRoutes.liveness(version: "1.2.3-test")
        let expected = try HTTPResponse.json(HealthStatus(status: "ok", checks: nil, version: "1.2.3-test"))
        let request = HTTPRequest(method: "GET", path: "/healthz")
        let context = RequestContext(requestID: "r", route: "/healthz", parameters: [:], logger: Logger(label: "test"))
        for _ in 0..<3 {
            let r = try handler(request, context)
            #expect(r.status == 200)
            #expect(r.body == expected.body)
            #expect(r.headers.map { "\($0.name): \($0.value)" } == expected.headers.map { "\($0.name): \($0.value)" })
            let decoded = try JSONValueDecoder().decode(HealthStatus.self, from: r.body)
            #expect(decoded == HealthStatus(status: "ok", checks: nil, version: "1.2.3-test"))
        }
    }
}
