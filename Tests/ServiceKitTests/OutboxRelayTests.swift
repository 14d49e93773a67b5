import Kafka
import Platform
import Postgres
import Testing
import TestSupport

@testable import ServiceKit

/// The relay with its database unreachable (a port nothing listens on: every turn fails at
/// connect), as when PostgreSQL is gone during a shutdown. Needs no stack. Assertions are on
/// completion, never on time (the `eventually` bound only ends a failing test).
@Suite(.timeLimit(.minutes(1))) struct OutboxRelayTests {
    static func relay() throws -> (OutboxRelay, PostgresPool) {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(conninfo: "postgresql://signet@127.0.0.1:1/none?connect_timeout=5", poolSize: 1),
            logger: TestStack.quietLogger)
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(brokers: "127.0.0.1:1", clientID: "relay-unit-test"), logger: TestStack.quietLogger)
        return (OutboxRelay(pool: pool, producer: producer, logger: TestStack.quietLogger, service: "relay-unit-test"), pool)
    }

    /// Cancelled without ever being asked to shut down (the group's shutdown sequence was held
    /// by an earlier service until the deadline): the relay ends instead of retrying forever.
    @Test func aCancelledRelayWhoseTurnsFailEndsWithoutAShutdown() async throws {
        let (relay, pool) = try Self.relay()
        defer { pool.close() }
        let ended = AtomicFlag(false)
        let running = Task {
            defer { ended.set(true) }
            try await relay.run()
        }
        #expect(await TestStack.eventually { await relay.turns >= 2 }, "no failed turn was taken")
        running.cancel()
        #expect(await TestStack.eventually(timeout: .seconds(30)) { ended.isSet }, "the cancelled relay kept running")
    }

    /// Draining, with turns that keep failing: the relay retries until it is cancelled, then
    /// ends, and its shutdown returns.
    @Test func aDrainingRelayWhoseTurnsFailEndsWhenCancelled() async throws {
        let (relay, pool) = try Self.relay()
        defer { pool.close() }
        let ended = AtomicFlag(false)
        let running = Task {
            defer { ended.set(true) }
            try await relay.run()
        }
        #expect(await TestStack.eventually { await relay.turns >= 1 })
        let shutdown = Task { await relay.shutdown() }
        let before = await relay.turns
        #expect(await TestStack.eventually { await relay.turns > before }, "the draining relay did not retry")
        running.cancel()
        #expect(await TestStack.eventually(timeout: .seconds(30)) { ended.isSet }, "the cancelled relay kept running")
        if ended.isSet { await shutdown.value }
    }
}
