import Foundation
import HTTPServer
import Kafka
import Platform
import Postgres
import Schema
import Synchronization

/// `/healthz` (the process serves), `/readyz` (PostgreSQL and Kafka answer; cached for a
/// second so probes cannot hammer them) and `/metrics` (Prometheus text).
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

    public func register(on router: inout Router) {
        router.get("/healthz") { _, _ in try .json(HealthStatus(status: "ok", checks: nil)) }
        router.get("/readyz") { [self] _, _ in
            let checks = await currentChecks()
            let ok = checks.values.allSatisfy { $0 == "ok" } && !draining.isSet
            var all = checks
            if draining.isSet { all["shutdown"] = "draining" }
            return try .json(HealthStatus(status: ok ? "ok" : "unavailable", checks: all), status: ok ? 200 : 503)
        }
        router.get("/metrics") { _, _ in
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
