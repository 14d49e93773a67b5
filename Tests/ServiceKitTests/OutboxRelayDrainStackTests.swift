import Foundation
import Kafka
import Platform
import Postgres
import Schema
import Synchronization
import Testing
import TestSupport

@testable import ServiceKit

/// PostgreSQL taken away during a graceful shutdown (issue #14's drain guarantee): the relay and
/// its service group end within the group's bound, and the events not yet published stay in the
/// outbox for the next start. PostgreSQL is started again at the end, for the suites after.
///
/// Assertions are on completion, never on time: a relay or a group that did not end fails by
/// the `eventually` bound or the suite's time limit.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct OutboxRelayDrainStackTests {
    /// The service before the relay in the shutdown order (a consumer, in a service): its
    /// shutdown stops PostgreSQL, then, when `holds`, does not return until released, as a
    /// consumer slow to close did in the field, so that the relay's own shutdown is never
    /// reached and the relay only learns of the end by cancellation.
    final class TakesPostgreSQLAway: Service, Sendable {
        let name = "takes-postgresql-away"
        let holds: Bool
        private let stop = Wakeups()
        private let state = Mutex<(stopped: Result<TestStack.StoppedPostgreSQL, any Error>?, held: [CheckedContinuation<Void, Never>]?)>((nil, []))

        init(holds: Bool) { self.holds = holds }

        var stopped: Result<TestStack.StoppedPostgreSQL, any Error>? { state.withLock { $0.stopped } }

        func run() async throws {
            var waiter = stop.makeWaiter()
            await waiter.wait()
        }

        func shutdown() async {
            let result: Result<TestStack.StoppedPostgreSQL, any Error>
            do { result = .success(try await TestStack.stopPostgreSQL()) } catch { result = .failure(error) }
            state.withLock { $0.stopped = result }
            stop.finish()
            guard holds else { return }
            await withCheckedContinuation { c in
                let now = state.withLock { s -> Bool in
                    guard s.held != nil else { return true }
                    s.held!.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }

        func release() {
            let held = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                defer { s.held = nil }
                return s.held ?? []
            }
            held.forEach { $0.resume() }
        }
    }

    /// - Parameter holds: whether the shutdown sequence is held before the relay (the relay is
    ///   then cancelled without ever draining), or reaches it (the relay drains with its
    ///   database gone, until the group cancels it).
    @Test(arguments: [true, false]) func theRelayAndItsGroupEndWhenPostgreSQLIsGoneMidDrain(holds: Bool) async throws {
        try TestStack.require()
        let (database, drop) = try await TestStack.scratchDatabase(prefix: "relaydrain")
        let pool = TestStack.pool(database: database)
        try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations, logger: TestStack.quietLogger)
        // Another session holds the relay's lock, as another replica publishing would: the rows
        // written below stay unsent, so the drain has work it cannot finish.
        let other = TestStack.pool(database: database, size: 1)
        try await other.withConnection { try await $0.query("SELECT pg_advisory_lock(\(OutboxRelay.lockKey))") }
        let events = 3
        for _ in 0..<events {
            try await pool.withTransaction { conn in
                let envelope = EventEnvelope(id: RandomUUID.string(), source: "relay-drain-test", type: "signet.test.relay.v1", subject: "relay-drain-test", data: Array("{}".utf8))
                try await Outbox.enqueue(envelope, topic: Topic.deadLetter(service: .registration), key: "relay-drain-test", on: conn)
            }
        }
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "relay-drain-test"), logger: TestStack.quietLogger)
        let relay = OutboxRelay(pool: pool, producer: producer, logger: TestStack.quietLogger, service: "relay-drain-test")
        let away = TakesPostgreSQLAway(holds: holds)
        // Shut down in reverse order: `away` first, then the relay.
        let group = ServiceGroup(services: [relay, away], logger: TestStack.quietLogger, maximumShutdownDuration: .seconds(3))
        let returned = AtomicFlag(false)
        let running = Task {
            defer { returned.set(true) }
            try await group.run()
        }
        #expect(await TestStack.eventually { await relay.turns >= 2 }, "the relay took no turn")

        group.triggerGracefulShutdown(reason: "test")
        let groupReturned = await TestStack.eventually(timeout: .seconds(60)) { returned.isSet }
        let relayEnded = await TestStack.eventually(timeout: .seconds(30)) { await relay.hasReturned }
        away.release()
        // PostgreSQL back before anything else can fail, so that the suites after find it (its
        // stop may outlast the group's bound on a loaded machine: it is waited for).
        _ = await TestStack.eventually(timeout: .seconds(90)) { away.stopped != nil }
        let stopped = try #require(away.stopped, "PostgreSQL was not stopped")
        try await TestStack.startPostgreSQL(try stopped.get())

        #expect(groupReturned, "the service group outlived its maximum shutdown duration")
        if groupReturned { try await running.value }
        #expect(relayEnded, "the relay kept running after the group's bound")
        let unsent = await TestStack.eventually(timeout: .seconds(30)) {
            let rows = try? await pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL") }
            return rows?.first?.int("n") == events
        }
        #expect(unsent, "the unsent events did not stay in the outbox")
        other.close()
        pool.close()
        await drop()
    }
}
