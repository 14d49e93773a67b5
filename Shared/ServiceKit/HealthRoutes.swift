import Foundation
import HTTPServer
import Kafka
import Platform
import Postgres
import Schema
import Synchronization

/// `/healthz` (the process serves), `/readyz` (PostgreSQL and Kafka answer; cached for a
/// second so probes cannot hammer them) and `/metrics` (Prometheus text).
///
/// Readiness fails (503) when PostgreSQL is unreachable or the process is draining. A Kafka
/// outage is reported (`"kafka": "unavailable"`, `"status": "degraded"`) but keeps the
/// instance ready: requests still succeed and their events wait in the outbox, so taking
/// every replica out of rotation would turn a delay into an outage.
public final class HealthRoutes: Sendable {
    let pool: PostgresPool
    let producer: KafkaProducer
    let draining: AtomicFlag
    private let cache = Mutex<(at: ContinuousClock.Instant, checks: [String: String])?>(nil)

    public init(pool: PostgresPool, producer: KafkaProducer, draining: AtomicFlag) {
        self.pool = pool
        self.producer = producer
        self.draining = draining
    }

    public func register(on router: inout GuardedRouter) {
        router.get("/healthz", .open) { _, _ in try .json(HealthStatus(status: "ok", checks: nil)) }
        router.get("/readyz", .open) { [self] _, _ in
            var checks = await currentChecks()
            let ready = checks["postgres"] == "ok" && !draining.isSet
            if draining.isSet { checks["shutdown"] = "draining" }
            let status = !ready ? "unavailable" : checks["kafka"] == "ok" ? "ok" : "degraded"
            return try .json(HealthStatus(status: status, checks: checks), status: ready ? 200 : 503)
        }
        router.get("/metrics", .open) { _, _ in
            .text(MetricsRegistry.shared.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    private func currentChecks() async -> [String: String] {
        if let c = cache.withLock({ $0 }), ContinuousClock.now - c.at < .seconds(1) { return c.checks }
        async let pg: Bool = (try? await pool.ping()) != nil
        async let kafka: Bool = producer.isBrokerReachable(timeoutMs: 1000)
        let checks = ["postgres": await pg ? "ok" : "unavailable", "kafka": await kafka ? "ok" : "unavailable"]
        cache.withLock { $0 = (ContinuousClock.now, checks) }
        return checks
    }
}
