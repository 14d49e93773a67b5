import FoundationEssentials
import HTTPServer
import JSON
import Kafka
import Platform
import Postgres
import Schema
import Synchronization

/// `/healthz` (the process serves: liveness, never tied to a dependency), `/readyz` (whether
/// the instance should get traffic; PostgreSQL and Kafka checked, cached for a second so
/// probes cannot hammer them) and `/metrics` (Prometheus text).
///
/// `/readyz` answers 200 `{"status":"ok"}` only when every check is `ok`; otherwise 503, so
/// that load balancers and orchestrators act on it, with `checks` naming what is wrong:
/// - `unavailable`: PostgreSQL is unreachable, or the instance is draining (`shutdown`);
/// - `degraded`: the process and its database work, but events do not flow: the Kafka
///   cluster does not answer (`kafka`), or a Kafka consumer of this process has been out of
///   its group (no partition, no member id) for `unassignedBound` (`consumers`: `unassigned`).
/// Requests that reach a degraded instance still succeed (their events wait in the outbox);
/// what 503 says is that this instance's events are not moving.
public final class HealthRoutes: Sendable {
    let pool: PostgresPool
    let producer: KafkaProducer
    let draining: AtomicFlag
    let unassignedBound: Duration
    let consumers: KafkaConsumerHealth
    private let cache = PlainLock<(at: ContinuousClock.Instant, checks: [String: String])?>(nil)

    /// - Parameter unassignedBound: how long a consumer may be out of its group before the
    ///   instance is not ready (`SIGNET_KAFKA_UNASSIGNED_READY_SECONDS`); zero turns it off.
    public init(
        pool: PostgresPool, producer: KafkaProducer, draining: AtomicFlag, unassignedBound: Duration = .seconds(30),
        consumers: KafkaConsumerHealth = .shared
    ) {
        self.pool = pool
        self.producer = producer
        self.draining = draining
        self.unassignedBound = unassignedBound
        self.consumers = consumers
    }

    public func register(on router: inout GuardedRouter) {
        router.getOpen("/healthz", immediate: Self.liveness(version: BuildInfo.version))
        router.get("/readyz", .open) { [self] _, _ in
            var checks = await currentChecks()
            checks["consumers"] = consumers.unassignedGroups(bound: unassignedBound).isEmpty ? "ok" : "unassigned"
            if draining.isSet { checks["shutdown"] = "draining" }
            let (status, code) = Self.readiness(checks)
            return try .json(HealthStatus(status: status, checks: checks, version: BuildInfo.version), status: code)
        }
        router.getOpen("/metrics", immediate: { _, _ in
            .text(MetricsRegistry.shared.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        })
    }

    /// The `/healthz` handler: 200 `{"status":"ok","version":…}`. The answer never changes, so
    /// it is encoded once, not per probe (encoding it was 9 % of the CPU of a `/healthz` load:
    /// `signet-bench serve-healthz`, which serves this same handler, under perf).
    /// It answers at once (an ``ImmediateHandler``: the server runs it without a task).
    public static func liveness(version: String) -> ImmediateHandler {
        let status = HealthStatus(status: "ok", checks: nil, version: version)
        guard let body = try? JSONValueEncoder().encodeToBytes(status) else { return { _, _ in try .json(status) } }
        return { _, _ in HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body) }
    }

    /// The `/readyz` status and HTTP status for `checks` (`postgres`, `kafka`, `consumers`,
    /// and `shutdown` while draining).
    static func readiness(_ checks: [String: String]) -> (status: String, code: Int) {
        if checks["postgres"] != "ok" || checks["shutdown"] != nil { return ("unavailable", 503) }
        if checks["kafka"] != "ok" || (checks["consumers"] ?? "ok") != "ok" { return ("degraded", 503) }
        return ("ok", 200)
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
