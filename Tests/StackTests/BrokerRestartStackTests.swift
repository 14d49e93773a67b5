import Foundation
import Platform
import Postgres
import Schema
import Testing
import TestSupport

/// The development broker killed (SIGKILL: its in-memory log, offsets and groups gone) and
/// started again during a burst of tenant changes: every tenant still reaches every service,
/// consumers own partitions again and readiness comes back. And `/readyz` is 503 while the
/// broker is away. Needs the stack `make test` starts; leaves a working broker behind.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(8)))
struct BrokerRestartStackTests {
    static let all = ServiceName.allCases

    static func readiness(_ service: ServiceName) async -> TestHTTP.Response? {
        try? await TestHTTP.send("GET", "\(Stack.url(service))/readyz", timeout: 5)
    }

    @Test func readinessIs503NamingKafkaWhileTheBrokerIsDownAndLivenessStays200() async throws {
        try TestStack.require()
        try TestStack.signalBroker(SIGUSR1)  // broker down, data kept
        var down: [ServiceName: TestHTTP.Response] = [:]
        for service in Self.all {
            _ = await TestStack.eventually(timeout: .seconds(20), every: .milliseconds(200)) { await Self.readiness(service)?.status == 503 }
            down[service] = await Self.readiness(service)
        }
        let live = try? await TestHTTP.send("GET", "\(Stack.registration)/healthz", timeout: 5)
        try TestStack.signalBroker(SIGUSR2)  // broker up
        for service in Self.all {
            let r = try #require(down[service], "\(service.rawValue): no /readyz answer")
            #expect(r.status == 503, "\(service.rawValue): /readyz answered \(r.status) while Kafka was down")
            let body = try r.json()
            // degraded: the database works, the events do not flow.
            #expect(body["status"] as? String == "degraded", "\(service.rawValue): \(r.text)")
            #expect((body["checks"] as? [String: Any])?["kafka"] as? String == "unavailable", "\(service.rawValue): \(r.text)")
            #expect((body["checks"] as? [String: Any])?["postgres"] as? String == "ok", "\(service.rawValue): \(r.text)")
        }
        #expect(live?.status == 200, "liveness must not depend on Kafka")
        for service in Self.all {
            let ready = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(200)) { await Self.readiness(service)?.status == 200 }
            #expect(ready, "\(service.rawValue) not ready again after the broker came back")
        }
    }

    @Test func aBrokerKilledAndRestartedDuringABurstLosesNoTenantAndConsumersRecover() async throws {
        try TestStack.require()
        let total = 900
        let killAt = 300
        let restartAt = 500
        let run = UInt32.random(in: 0...UInt32.max)
        let ids = (0..<total).map { "restart-\(run)-\($0)" }
        let done = PlainLock(0)
        let failures = PlainLock<[String]>([])
        let brokerEvents = PlainLock<[String]>([])

        // The burst: 16 writers; the broker is killed when `killAt` writes are done (others in
        // flight, the relays and consumers busy) and started again at `restartAt`. Writes
        // succeed throughout: events wait in the outboxes.
        let controller = Task {
            _ = await TestStack.eventually(timeout: .seconds(120), every: .milliseconds(5)) { done.withLock { $0 } >= killAt }
            do {
                try await TestStack.killBroker()
                brokerEvents.withLock { $0.append("killed") }
            } catch { brokerEvents.withLock { $0.append("kill failed: \(error)") } }
            _ = await TestStack.eventually(timeout: .seconds(120), every: .milliseconds(5)) { done.withLock { $0 } >= restartAt }
            do {
                try await TestStack.startBroker()
                brokerEvents.withLock { $0.append("started") }
            } catch { brokerEvents.withLock { $0.append("start failed: \(error)") } }
        }
        await withTaskGroup(of: Void.self) { group in
            let next = PlainLock(0)
            for _ in 0..<16 {
                group.addTask {
                    while true {
                        let i = next.withLock { n -> Int in
                            defer { n += 1 }
                            return n
                        }
                        guard i < total else { return }
                        let status = (try? await Stack.putTenant(ids[i]))?.status
                        if status != 201 { failures.withLock { $0.append("\(ids[i]): \(status.map(String.init) ?? "no answer")") } }
                        done.withLock { $0 += 1 }
                        // Keep the burst going while the broker is away, for about 3 s (writes
                        // are fast).
                        if i >= killAt && i < restartAt { try? await Task.sleep(for: .milliseconds(250)) }
                    }
                }
            }
        }
        await controller.value
        #expect(brokerEvents.withLock { $0 } == ["killed", "started"])
        #expect(failures.withLock { $0 }.isEmpty, "writes failed while the broker was away: \(failures.withLock { $0.prefix(5) })")

        // Every tenant reaches every other service (one deadline for all, so that a failing run
        // ends within the suite's time limit).
        let deadline = ContinuousClock.now + .seconds(150)
        for service in Stack.consumers {
            let pool = TestStack.pool(database: "signet_\(service.rawValue)", size: 1)
            defer { pool.close() }
            let seen = PlainLock(0)
            let all = await TestStack.eventually(timeout: max(.seconds(1), deadline - .now), every: .milliseconds(500)) {
                let rows = try? await pool.withConnection {
                    try await $0.query("SELECT count(*) AS n FROM tenants WHERE id = ANY(\(PostgresArray(ids)))")
                }
                let n = rows?.first?.int("n") ?? 0
                seen.withLock { $0 = n }
                return n == total
            }
            #expect(all, "\(service.rawValue) has \(seen.withLock { $0 }) of \(total) tenants after the broker restart")
        }

        // Every consumer group member owns partitions again, and every service is ready.
        for service in Self.all {
            let assigned = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(250)) {
                await TestStack.metricValues(
                    Stack.url(service), name: "signet_kafka_consumer_assigned_partitions", labelFragment: "group=\"signet-\(service.rawValue)\""
                ).contains { $0 > 0 }
            }
            #expect(assigned, "\(service.rawValue)'s consumer owns no partition after the broker restart")
        }
        let broadcastAssigned = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(250)) {
            await TestStack.metricValues(
                Stack.url(.authentication), name: "signet_kafka_consumer_assigned_partitions", labelFragment: "-broadcast-"
            ).contains { $0 > 0 }
        }
        #expect(broadcastAssigned, "authentication's broadcast listener owns no partition after the broker restart")
        for service in Self.all {
            let ready = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(250)) { await Self.readiness(service)?.status == 200 }
            let answer = await Self.readiness(service)?.text ?? "-"
            #expect(ready, "\(service.rawValue) not ready after the broker restart: \(answer)")
        }

        // And the stack works as before for what comes next.
        let after = Stack.newTenantID("after-restart")
        #expect(try await Stack.putTenant(after).status == 201)
        for service in Stack.consumers {
            #expect(await TestStack.eventually(timeout: .seconds(30)) { await Stack.sees(service, after) }, "\(service.rawValue)")
        }
    }
}
