import Testing
@testable import ServiceKit

@Suite struct ReadinessTests {
    @Test(arguments: [
        (["postgres": "ok", "kafka": "ok", "consumers": "ok"], "ok", 200),
        (["postgres": "ok", "kafka": "unavailable", "consumers": "ok"], "degraded", 503),
        (["postgres": "ok", "kafka": "ok", "consumers": "unassigned"], "degraded", 503),
        (["postgres": "unavailable", "kafka": "ok", "consumers": "ok"], "unavailable", 503),
        (["postgres": "unavailable", "kafka": "unavailable", "consumers": "unassigned"], "unavailable", 503),
        (["postgres": "ok", "kafka": "ok", "consumers": "ok", "shutdown": "draining"], "unavailable", 503),
    ])
    func readinessFollowsEveryCheck(_ c: ([String: String], String, Int)) {
        let r = HealthRoutes.readiness(c.0)
        #expect(r.status == c.1 && r.code == c.2, "\(c.0)")
    }
}
