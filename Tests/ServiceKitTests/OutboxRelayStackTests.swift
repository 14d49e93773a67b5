import Foundation
import Kafka
import Platform
import Postgres
import Schema
import Testing
import TestSupport

@testable import ServiceKit

/// The relay as an actor, against the stack's PostgreSQL (a scratch database) and broker.
/// Named `…StackTests` so that `SIGNET_TEST_FILTER='StackTests|…'` runs it with the stack.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OutboxRelayStackTests {
    struct Fixture {
        let pool: PostgresPool
        let producer: KafkaProducer
        let relay: OutboxRelay
        let drop: @Sendable () async -> Void
    }

    static func fixture(linger: Duration = .milliseconds(20)) async throws -> Fixture {
        try TestStack.require()
        let (name, drop) = try await TestStack.scratchDatabase(prefix: "relay")
        let pool = TestStack.pool(database: name)
        try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations, logger: TestStack.quietLogger)
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "relay-test"), logger: TestStack.quietLogger)
        let relay = OutboxRelay(pool: pool, producer: producer, logger: TestStack.quietLogger, service: "relay-test", linger: linger)
        return Fixture(pool: pool, producer: producer, relay: relay, drop: drop)
    }

    /// Commits one test event (id `id`) in its own transaction.
    static func commitEvent(_ pool: PostgresPool, id: String = RandomUUID.string()) async throws {
        try await pool.withTransaction { conn in
            let envelope = EventEnvelope(id: id, source: "relay-test", type: "signet.test.relay.v1", subject: "relay-test", data: Array("{}".utf8))
            try await Outbox.enqueue(envelope, topic: Topic.deadLetter(service: .registration), key: "relay-test", on: conn)
        }
    }

    /// A burst of notifications from request handlers (synchronous calls, no await) costs the
    /// relay a turn or two, not one each.
    @Test func aBurstOfNotificationsCoalesces() async throws {
        let f = try await Self.fixture()
        let running = Task { try await f.relay.run() }
        #expect(await TestStack.eventually { await f.relay.turns >= 1 })
        try await Task.sleep(for: .milliseconds(20))  // the first turn found nothing: it waits
        let before = await f.relay.turns
        let notifyFromAHandler: @Sendable () -> Void = { for _ in 0..<1000 { f.relay.notify() } }
        notifyFromAHandler()
        #expect(await TestStack.eventually { await f.relay.turns > before })
        try await Task.sleep(for: .milliseconds(30))
        let taken = await f.relay.turns - before
        // One for the burst; one more if the relay woke during it; one for its idle timer.
        #expect(taken >= 1 && taken <= 3, "\(taken) turns for 1000 notifications")
        await f.relay.shutdown()
        try await running.value
        f.pool.close()
        await f.drop()
    }

    /// After a turn that sent a few rows the relay pauses (here up to ten minutes); the commit
    /// that makes an eighth of a batch (32) since the pause began ends it, not one before; after
    /// a turn of 32 rows there is no pause; a shutdown ends a pause, and what is left is sent
    /// before it returns.
    @Test func aPauseEndsWhenABatchWorthOfCommitsIsNotifiedOrOnShutdown() async throws {
        let f = try await Self.fixture(linger: .seconds(600))
        #expect(f.relay.fill == 32)
        let running = Task { try await f.relay.run() }
        @Sendable func commit(_ n: Int) async throws {
            for _ in 0..<n {
                try await Self.commitEvent(f.pool)
                f.relay.notify()
            }
        }
        @Sendable func sentCount() async throws -> Int {
            try await f.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox_sent") }.first?.int("n") ?? -1
        }
        try await commit(1)
        #expect(await TestStack.eventually { (try? await sentCount()) == 1 && f.relay.isPausing }, "the first row was not sent, or no pause followed")
        try await commit(31)
        try await Task.sleep(for: .milliseconds(200))
        #expect(f.relay.isPausing, "31 commits ended the pause")
        #expect(try await sentCount() == 1)
        try await commit(1)
        #expect(await TestStack.eventually { (try? await sentCount()) == 33 }, "the 32nd commit did not end the pause")
        // A turn of 32 rows is no small one: the relay goes on at once, finds nothing, and waits
        // for the next commit, which leaves at once and is followed by a pause again.
        try await commit(1)
        #expect(await TestStack.eventually { (try? await sentCount()) == 34 && f.relay.isPausing })
        try await commit(1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await sentCount() == 34)
        await f.relay.shutdown()  // ends the pause; the row is sent before it returns
        try await running.value
        #expect(try await sentCount() == 35)
        f.pool.close()
        await f.drop()
    }

    /// Rows acknowledged by a cluster other than the producer's current one (the cluster was
    /// replaced, and its logs went with it) are sent again by the first turn of a relay that
    /// has not seen the current cluster yet, in that turn, with their ids, and marked with the
    /// current cluster; rows the current cluster acknowledged stay as they were, and the next
    /// turn sends nothing. Sent rows leave the outbox for `outbox_sent`, whole.
    @Test func rowsAcknowledgedByAnotherClusterAreSentAgain() async throws {
        let f = try await Self.fixture()
        #expect(await TestStack.eventually(timeout: .seconds(30)) { f.producer.clusterID() != nil }, "the producer never learned its cluster")
        let cluster = try #require(f.producer.clusterID())
        var ids: [String] = []
        for _ in 0..<3 {
            let id = RandomUUID.string()
            ids.append(id)
            try await Self.commitEvent(f.pool, id: id)
        }
        #expect(try await f.relay.publishBatch() == (sent: 3, failed: 0))
        @Sendable func rows() async throws -> [String: (cluster: String?, sentAt: String?, id: Int64?)] {
            let result = try await f.pool.withConnection {
                try await $0.query("SELECT id, event_id, sent_cluster, sent_at::text AS sent_at FROM outbox_sent")
            }
            var out: [String: (cluster: String?, sentAt: String?, id: Int64?)] = [:]
            for row in result { out[row.string("event_id") ?? ""] = (row.string("sent_cluster"), row.string("sent_at"), row.int64("id")) }
            return out
        }
        @Sendable func unsent() async throws -> Int {
            try await f.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox") }.first?.int("n") ?? -1
        }
        let first = try await rows()
        #expect(first.count == 3 && first.values.allSatisfy { $0.cluster == cluster && $0.sentAt != nil }, "\(first)")
        #expect(try await unsent() == 0)
        let whole = try await f.pool.withConnection {
            try await $0.query(
                """
                SELECT count(*) AS n FROM outbox_sent WHERE topic = \(Topic.deadLetter(service: .registration)) AND message_key = 'relay-test'
                  AND event_type = 'signet.test.relay.v1' AND source = 'relay-test' AND subject = 'relay-test' AND data = '{}'
                  AND created_at <= sent_at AND event_time IS NOT NULL
                """)
        }.first?.int("n")
        #expect(whole == 3, "a sent row lost a column on its way to outbox_sent")
        // Two of them as if a previous cluster had acknowledged them.
        try await f.pool.withConnection { conn in
            try await conn.query(
                "UPDATE outbox_sent SET sent_cluster = 'previous-cluster', sent_at = now() - interval '1 hour' WHERE event_id = ANY(\(PostgresArray(Array(ids.prefix(2)))))")
        }
        // A relay started now (a restart, another replica) has not seen the current cluster.
        let restarted = OutboxRelay(pool: f.pool, producer: f.producer, logger: TestStack.quietLogger, service: "relay-test")
        #expect(try await restarted.publishBatch() == (sent: 2, failed: 0))
        let after = try await rows()
        #expect(after.values.allSatisfy { $0.cluster == cluster }, "\(after)")
        for id in ids.prefix(2) {
            #expect(after[id]?.sentAt != nil && after[id]?.sentAt != first[id]?.sentAt, "\(id) was not sent again")
            #expect(after[id]?.id != nil && after[id]?.id == first[id]?.id, "\(id) changed its place in outbox order")
        }
        #expect(after[ids[2]]?.sentAt == first[ids[2]]?.sentAt, "a row the current cluster acknowledged was sent again")
        #expect(after.count == 3)
        #expect(try await unsent() == 0)
        #expect(try await restarted.publishBatch() == (sent: 0, failed: 0))
        f.pool.close()
        await f.drop()
    }

    /// A row Kafka does not acknowledge (here a message over the producer's 1,000,000-byte
    /// limit) stops the turn there: the rows before it are sent, it and the rows after it stay,
    /// and the error names its event type, its topic and Kafka's reason — never its data — so
    /// the relay's log line says why the outbox is not draining.
    @Test func aRowKafkaRefusesIsNamedAndHoldsTheRowsAfterIt() async throws {
        let f = try await Self.fixture()
        let topic = Topic.deadLetter(service: .registration)
        try await Self.commitEvent(f.pool)
        let secret = "not-in-the-error-" + RandomUUID.string()
        try await f.pool.withTransaction { conn in
            let data = #"{"x":"\#(secret)\#(String(repeating: "a", count: 1_100_000))"}"#
            let envelope = EventEnvelope(id: RandomUUID.string(), source: "relay-test", type: "signet.test.oversized.v1", subject: "relay-test", data: Array(data.utf8))
            try await Outbox.enqueue(envelope, topic: topic, key: "relay-test", on: conn)
        }
        try await Self.commitEvent(f.pool)
        var thrown: OutboxPublishError?
        do {
            try await f.relay.publishBatch()
        } catch let error as OutboxPublishError {
            thrown = error
        }
        let error = try #require(thrown)
        #expect(error.failed == 2 && error.attempted == 3)
        #expect(error.first.eventType == "signet.test.oversized.v1" && error.first.topic == topic)
        #expect(error.first.reason.contains("MSG_SIZE_TOO_LARGE"), "\(error.first.reason)")
        #expect(error.description.contains("signet.test.oversized.v1 on \(topic)") && !error.description.contains(secret), "\(error)")
        let counts = try await f.pool.withConnection {
            try await $0.query("SELECT (SELECT count(*) FROM outbox_sent) AS sent, (SELECT count(*) FROM outbox) AS unsent")
        }
        #expect(counts.first?.int("sent") == 1 && counts.first?.int("unsent") == 2)

        // A running relay held there shows its backlog (read on failing turns too; before, only
        // after a turn that sent everything, so a held relay's gauge stood still).
        let service = "relay-held-" + RandomUUID.string().prefix(8)
        let held = OutboxRelay(pool: f.pool, producer: f.producer, logger: TestStack.quietLogger, service: String(service))
        let running = Task { try await held.run() }
        let shown = await TestStack.eventually(timeout: .seconds(10)) {
            MetricsRegistry.shared.render().contains("signet_outbox_backlog{service=\"\(service)\"} 2\n")
        }
        #expect(shown)
        running.cancel()
        _ = try? await running.value
        f.pool.close()
        await f.drop()
    }

    /// A committed row is published and marked sent; shutdown returns once the relay stopped,
    /// and at once when the relay was never run.
    @Test func publishesThenDrainsOnShutdown() async throws {
        let f = try await Self.fixture()
        await f.relay.shutdown()  // never ran: returns at once
        let g = try await Self.fixture()
        let running = Task { try await g.relay.run() }
        let marker = RandomUUID.string()
        try await Self.commitEvent(g.pool, id: marker)
        g.relay.notify()
        let sent = await TestStack.eventually(timeout: .seconds(30)) {
            let rows = try? await g.pool.withConnection {
                try await $0.query("SELECT (SELECT count(*) FROM outbox_sent) AS n, (SELECT count(*) FROM outbox) AS unsent")
            }
            return rows?.first?.int("n") == 1 && rows?.first?.int("unsent") == 0
        }
        #expect(sent)
        await g.relay.shutdown()
        try await running.value  // run() has returned: shutdown waited for it
        for x in [f, g] {
            x.pool.close()
            await x.drop()
        }
    }

    /// A relay of an earlier release marks rows sent in place (`sent_at` in the outbox): during
    /// a rolling upgrade this relay skips them, sends them again when they were acknowledged by
    /// a replaced cluster (as that relay did), and its purge deletes them a day after they
    /// were sent, as it does in `outbox_sent`.
    @Test func rowsAnEarlierReleaseMarkedSentInPlaceAreSkippedRequeuedAndPurged() async throws {
        let f = try await Self.fixture()
        #expect(await TestStack.eventually(timeout: .seconds(30)) { f.producer.clusterID() != nil }, "the producer never learned its cluster")
        let cluster = try #require(f.producer.clusterID())
        let ids = (0..<4).map { _ in RandomUUID.string() }
        for id in ids { try await Self.commitEvent(f.pool, id: id) }
        // 0: unsent; 1: marked in place by this cluster; 2: by a replaced one; 3: by this
        // cluster two days ago.
        try await f.pool.withConnection { conn in
            try await conn.query("UPDATE outbox SET sent_at = now() - interval '1 minute', sent_cluster = \(cluster) WHERE event_id = \(ids[1])")
            try await conn.query("UPDATE outbox SET sent_at = now() - interval '1 minute', sent_cluster = 'previous-cluster' WHERE event_id = \(ids[2])")
            try await conn.query("UPDATE outbox SET sent_at = now() - interval '2 days', sent_cluster = \(cluster) WHERE event_id = \(ids[3])")
        }
        #expect(try await f.relay.publishBatch() == (sent: 2, failed: 0))
        #expect(try await f.relay.publishBatch() == (sent: 0, failed: 0))
        /// Event ids in the outbox (`sent` false) or in `outbox_sent`, in outbox order.
        @Sendable func eventIDs(sent: Bool) async throws -> [String] {
            let sql: PostgresQuery = sent ? "SELECT event_id FROM outbox_sent ORDER BY id" : "SELECT event_id FROM outbox ORDER BY id"
            return try await f.pool.withConnection { try await $0.query(sql) }.compactMap { $0.string("event_id") }
        }
        #expect(try await eventIDs(sent: true) == [ids[0], ids[2]])
        #expect(try await eventIDs(sent: false) == [ids[1], ids[3]])
        // A day later for the one, a minute for the other: the purge takes the first only; and
        // rows in outbox_sent past a day go too.
        try await f.pool.withConnection { conn in
            try await conn.query("UPDATE outbox_sent SET sent_at = now() - interval '25 hours' WHERE event_id = \(ids[2])")
        }
        try await f.relay.purgeOldRows()
        #expect(try await eventIDs(sent: false) == [ids[1]], "a row marked sent in place was purged early, or one a day old kept")
        #expect(try await eventIDs(sent: true) == [ids[0]])
        f.pool.close()
        await f.drop()
    }

    /// The purge takes one batch a table a call and says whether one came back full; rows
    /// younger than their keeping (a day sent, a week processed) stay.
    @Test func thePurgeTakesOneBatchATableAndSaysWhetherMoreMayWait() async throws {
        let f = try await Self.fixture()
        try await f.pool.withConnection { conn in
            try await Self.insertSent(conn, old: 5, recent: 1)
            try await conn.query(
                """
                INSERT INTO processed_events (event_id, event_type, topic, kafka_partition, kafka_offset, processed_at)
                SELECT 'p' || g, 'signet.test.relay.v1', 't', 0, g, now() - CASE WHEN g <= 3 THEN interval '8 days' ELSE interval '6 days' END
                FROM generate_series(1, 4) g
                """)
        }
        @Sendable func counts() async throws -> [Int] {
            let row = try await f.pool.withConnection {
                try await $0.query("SELECT (SELECT count(*) FROM outbox_sent) AS sent, (SELECT count(*) FROM processed_events) AS processed")
            }.first
            return [row?.int("sent") ?? -1, row?.int("processed") ?? -1]
        }
        #expect(try await f.relay.purgeOldRows(limit: 2) == true)
        #expect(try await counts() == [4, 2])
        #expect(try await f.relay.purgeOldRows(limit: 2) == true)
        #expect(try await counts() == [2, 1])
        #expect(try await f.relay.purgeOldRows(limit: 2) == false)
        #expect(try await counts() == [1, 1])
        #expect(try await f.relay.purgeOldRows(limit: 2) == false)
        #expect(try await counts() == [1, 1])
        f.pool.close()
        await f.drop()
    }

    /// A running relay purges on its first turn, and goes on turn after turn while batches come
    /// back full: a backlog of more than a batch (25,000 rows sent two days ago) is gone without
    /// waiting ten minutes for each batch.
    @Test func aRunningRelayPurgesABacklogOfManyBatchesOnItsFirstTurns() async throws {
        let f = try await Self.fixture()
        // Rows another cluster acknowledged would be sent again instead (see above).
        #expect(await TestStack.eventually(timeout: .seconds(30)) { f.producer.clusterID() != nil }, "the producer never learned its cluster")
        let cluster = try #require(f.producer.clusterID())
        try await f.pool.withConnection { try await Self.insertSent($0, old: 25_000, recent: 3, cluster: cluster) }
        let running = Task { try await f.relay.run() }
        let purged = await TestStack.eventually(timeout: .seconds(60)) {
            (try? await f.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox_sent") }.first?.int("n")) == 3
        }
        #expect(purged, "the backlog of sent rows was not purged")
        await f.relay.shutdown()
        try await running.value
        f.pool.close()
        await f.drop()
    }

    /// A purge that fails (here its table is gone) is logged and left for ten minutes: the relay
    /// goes on publishing, turn after turn, and counts no publishing failure.
    @Test func aPurgeThatFailsNeverStandsBetweenTheOutboxAndKafka() async throws {
        let f = try await Self.fixture()
        #expect(await TestStack.eventually(timeout: .seconds(30)) { f.producer.clusterID() != nil }, "the producer never learned its cluster")
        let service = "relay-purge-\(RandomUUID.string().prefix(8))"
        let relay = OutboxRelay(pool: f.pool, producer: f.producer, logger: TestStack.quietLogger, service: service, linger: .milliseconds(20))
        try await f.pool.withConnection { try await $0.query("ALTER TABLE processed_events RENAME TO processed_events_elsewhere") }
        let running = Task { try await relay.run() }
        for n in 1...3 {
            try await Self.commitEvent(f.pool)
            relay.notify()
            let sent = await TestStack.eventually(timeout: .seconds(10)) {
                (try? await f.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox_sent") }.first?.int("n")) == n
            }
            #expect(sent, "event \(n) was not published")
        }
        let failures = MetricsRegistry.shared.render().split(separator: "\n")
            .first { $0.hasPrefix("signet_outbox_publish_failures_total{") && $0.contains("\"\(service)\"") }
        #expect(failures?.split(separator: " ").last == "0", "\(String(describing: failures))")
        await relay.shutdown()
        try await running.value
        f.pool.close()
        await f.drop()
    }

    /// Puts `old` rows sent two days ago and `recent` sent a minute ago in `outbox_sent`,
    /// acknowledged by `cluster`.
    static func insertSent(_ conn: PostgresConnection, old: Int, recent: Int, cluster: String = "c") async throws {
        try await conn.query(
            """
            INSERT INTO outbox_sent (id, event_id, topic, message_key, event_type, source, event_time, data, created_at, sent_at, sent_cluster)
            SELECT g, 'e' || g, 't', 'k', 'signet.test.relay.v1', 'relay-test', now(), '{}', now(),
                now() - CASE WHEN g <= \(old) THEN interval '2 days' ELSE interval '1 minute' END, \(cluster)
            FROM generate_series(1, \(old + recent)) g
            """)
    }

    /// Migration 8 on a database of the earlier layout, with rows sent and unsent: it adds
    /// `outbox_sent` and moves nothing (rows sent in place age out where they are); the outbox
    /// keeps its indexes, which the relay's scan of unsent rows relies on meanwhile.
    @Test func theMigrationAddsOutboxSentAndMovesNothing() async throws {
        try TestStack.require()
        let (name, drop) = try await TestStack.scratchDatabase(prefix: "relaymig")
        let pool = TestStack.pool(database: name)
        try await Migrator.migrate(pool: pool, migrations: Array(Outbox.commonMigrations.prefix(7)), logger: TestStack.quietLogger)
        let ids = (0..<3).map { _ in RandomUUID.string() }
        for id in ids { try await Self.commitEvent(pool, id: id) }
        try await pool.withConnection { conn in
            try await conn.query("UPDATE outbox SET sent_at = now(), sent_cluster = 'c1' WHERE event_id = ANY(\(PostgresArray(Array(ids.prefix(2)))))")
        }
        #expect(try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations, logger: TestStack.quietLogger) == [8])
        let counts = try await pool.withConnection {
            try await $0.query(
                "SELECT (SELECT count(*) FROM outbox) AS outbox, (SELECT count(*) FROM outbox WHERE sent_at IS NULL) AS unsent, (SELECT count(*) FROM outbox_sent) AS sent")
        }.first
        #expect(counts?.int("outbox") == 3 && counts?.int("unsent") == 1 && counts?.int("sent") == 0)
        let indexes = try await pool.withConnection {
            try await $0.query("SELECT indexname FROM pg_indexes WHERE tablename IN ('outbox', 'outbox_sent') ORDER BY indexname")
        }
        #expect(indexes.map { $0.string("indexname") ?? "" } == ["outbox_event_id_key", "outbox_pkey", "outbox_sent_at", "outbox_sent_by_time", "outbox_unsent"])
        pool.close()
        await drop()
    }
}
