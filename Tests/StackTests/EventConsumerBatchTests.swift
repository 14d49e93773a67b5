import Foundation
import Kafka
import Platform
import Postgres
import Schema
import ServiceKit
import Synchronization
import Testing
import TestSupport

/// A probe event applied through a batch handler (runs of consecutive ones in one call).
private struct BatchProbe: EventPayload {
    static let eventType = "signet.test.batch-probe.v1"
    static let topic = Topic.deadLetter(service: .pii)
    static let schemaFile = ""
    static let fullExample = BatchProbe(seq: 1)
    static let minimalExample = BatchProbe(seq: 1)
    var seq: Int
    func validate() throws { if seq < 0 { throw EventDecodingError.invalidData("seq") } }
}

/// A probe event applied one at a time.
private struct SingleProbe: EventPayload {
    static let eventType = "signet.test.single-probe.v1"
    static let topic = Topic.deadLetter(service: .pii)
    static let schemaFile = ""
    static let fullExample = SingleProbe(seq: 1)
    static let minimalExample = SingleProbe(seq: 1)
    var seq: Int
    func validate() throws { if seq < 0 { throw EventDecodingError.invalidData("seq") } }
}

/// A probe event with an idempotent batch handler (a latest value per key, kept with a guard).
private struct LatestProbe: EventPayload {
    static let eventType = "signet.test.latest-probe.v1"
    static let topic = Topic.deadLetter(service: .pii)
    static let schemaFile = ""
    static let fullExample = LatestProbe(key: "k", seq: 1)
    static let minimalExample = LatestProbe(key: "k", seq: 1)
    var key: String
    var seq: Int
    func validate() throws { if seq < 0 { throw EventDecodingError.invalidData("seq") } }
}

/// The type the skip test's first consumer does not handle, and its second one does.
private struct OtherProbe: EventPayload {
    static let eventType = "signet.test.not-handled-here.v1"
    static let topic = Topic.deadLetter(service: .oob)
    static let schemaFile = ""
    static let fullExample = OtherProbe(seq: 1)
    static let minimalExample = OtherProbe(seq: 1)
    var seq: Int
    func validate() throws {}
}

/// The event consumer takes what Kafka has fetched in batches: runs of batch-handled events in
/// one transaction and one handler call, other events one at a time, and the same outcome as
/// one record at a time (order, exactly one effect per event id, a bad record dead-lettered
/// alone, no handler run twice because a neighbour failed).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct EventConsumerBatchTests {
    @Test func batchesApplyInOrderOnceEachAndDeadLetterOnlyTheBadRecord() async throws {
        try TestStack.require()
        let (pool, drop) = try await scratchPool(
            prefix: "consumer_batch", probeTables: "CREATE TABLE applied (n bigserial PRIMARY KEY, seq int NOT NULL, kind text NOT NULL)")
        defer {
            pool.close()
            Task { await drop() }
        }

        let marker = UUID().uuidString.lowercased()
        let config = KafkaConfiguration(brokers: TestStack.brokers, clientID: "signet-batch-test")
        let producer = try KafkaProducer(configuration: config, logger: TestStack.quietLogger)
        // Runs of batch probes with single probes between them, one duplicate id, and one
        // record whose data fails validation. One key: one partition, so one order.
        let badSeq = 57
        var messages: [KafkaOutgoingMessage] = []
        func message(_ id: String, _ type: String, _ seq: Int) -> KafkaOutgoingMessage {
            EventEnvelope(id: id, source: "/signet/test", type: type, time: Date(), subject: marker, data: Array("{\"seq\":\(seq == badSeq ? -1 : seq)}".utf8))
                .kafkaMessage(topic: BatchProbe.topic, key: marker)
        }
        for seq in 0..<120 {
            let type = seq % 10 == 9 ? SingleProbe.eventType : BatchProbe.eventType
            messages.append(message("\(marker)-\(seq)", type, seq))
            if seq == 30 { messages.append(message("\(marker)-30", type, 30)) }  // redelivered id
        }
        for result in await producer.sendAll(messages) { _ = try result.get() }

        let batchSizes = Mutex<[Int]>([])
        var handlers = EventHandlers()
        handlers.onBatch(BatchProbe.self) { events, conn in
            batchSizes.withLock { $0.append(events.count) }
            for (e, _) in events { try await conn.query("INSERT INTO applied (seq, kind) VALUES (\(e.seq), 'batch')") }
        }
        // Stands for a handler with an effect outside the database (a delivery): it must run
        // once per event even when a run of batch events around it fails and is retried.
        let singleCalls = Mutex(0)
        handlers.on(SingleProbe.self) { e, _, conn in
            singleCalls.withLock { $0 += 1 }
            try await conn.query("INSERT INTO applied (seq, kind) VALUES (\(e.seq), 'single')")
        }
        let consumer = try EventConsumerService(
            service: .transaction, kafka: config, producer: producer, pool: pool, handlers: handlers,
            logger: TestStack.quietLogger, maxHandlerAttempts: 1, groupID: "batch-test-\(marker)", topics: [BatchProbe.topic])
        let run = Task { try await consumer.run() }

        let expected = (0..<120).filter { $0 != badSeq }
        let done = try await TestStack.eventually(timeout: .seconds(60)) {
            try await pool.withConnection { try await $0.query("SELECT count(*) AS n FROM applied") }.first?.int("n") == expected.count
        }
        // Wait for the dead letter too, then stop.
        let deadLettered = try await findDeadLetter(id: "\(marker)-\(badSeq)", config: config)
        await consumer.shutdown()
        _ = try? await run.value

        #expect(done)
        let rows = try await pool.withConnection { try await $0.query("SELECT seq, kind FROM applied ORDER BY n") }
        #expect(rows.compactMap { $0.int("seq") } == expected, "each event once, in the order produced")
        #expect(rows.filter { $0.string("kind") == "single" }.count == expected.filter { $0 % 10 == 9 }.count)
        #expect(singleCalls.withLock { $0 } == expected.filter { $0 % 10 == 9 }.count, "one-at-a-time handlers ran once per event")
        let dedupe = try await pool.withConnection { try await $0.query("SELECT count(*) AS n FROM processed_events") }.first?.int("n")
        #expect(dedupe == expected.count)
        #expect(deadLettered, "the invalid record goes to the dead-letter topic")
        #expect(batchSizes.withLock { $0 }.contains { $0 > 1 }, "consecutive probes reached the batch handler together")
    }

    /// An idempotent type's events record no id: a redelivery reaches its handler again (and
    /// changes nothing), while the recorded types around it keep exactly one effect per id, in
    /// runs applied together and in a run of one.
    @Test func idempotentTypesRecordNoEventIDAndTheOthersStayDeduplicated() async throws {
        try TestStack.require()
        let (pool, drop) = try await scratchPool(
            prefix: "consumer_idem",
            probeTables: """
                CREATE TABLE applied (n bigserial PRIMARY KEY, seq int NOT NULL);
                CREATE TABLE latest (k text PRIMARY KEY, seq int NOT NULL);
                """)
        defer {
            pool.close()
            Task { await drop() }
        }

        let marker = UUID().uuidString.lowercased()
        // A topic of its own (the other test's probes would reach this consumer, as it reads
        // from the start); only this run's events (subject = marker) are looked at.
        let topic = Topic.deadLetter(service: .authentication)
        let config = KafkaConfiguration(brokers: TestStack.brokers, clientID: "signet-idem-test")
        let producer = try KafkaProducer(configuration: config, logger: TestStack.quietLogger)
        var messages: [KafkaOutgoingMessage] = []
        func message(_ id: String, _ type: String, _ data: String) -> KafkaOutgoingMessage {
            EventEnvelope(id: id, source: "/signet/test", type: type, time: Date(), subject: marker, data: Array(data.utf8))
                .kafkaMessage(topic: topic, key: marker)
        }
        // Runs mixing both batch types; every 10th a one-at-a-time probe, so that some latest
        // probes come alone (a run of one); then a latest probe's id delivered again, and an
        // older value for a key under a new id, and a recorded probe's id delivered again.
        var latestSent = 0
        var lastSeq: [String: Int] = [:]
        for seq in 0..<100 {
            if seq % 10 == 9 {
                messages.append(message("\(marker)-s\(seq)", SingleProbe.eventType, "{\"seq\":\(seq)}"))
            } else if seq % 3 == 0 || seq % 10 == 8 {
                let key = "k\(seq % 4)"
                messages.append(message("\(marker)-l\(seq)", LatestProbe.eventType, "{\"key\":\"\(key)\",\"seq\":\(seq)}"))
                latestSent += 1
                lastSeq[key] = seq
            } else {
                messages.append(message("\(marker)-b\(seq)", BatchProbe.eventType, "{\"seq\":\(seq)}"))
            }
        }
        messages.append(message("\(marker)-lolder", LatestProbe.eventType, "{\"key\":\"k0\",\"seq\":0}"))
        messages.append(message("\(marker)-l96", LatestProbe.eventType, "{\"key\":\"k0\",\"seq\":96}"))  // redelivered id
        messages.append(message("\(marker)-b97", BatchProbe.eventType, "{\"seq\":97}"))  // redelivered id
        latestSent += 2
        for result in await producer.sendAll(messages) { _ = try result.get() }

        let latestCalls = Mutex(0)
        var handlers = EventHandlers()
        handlers.onBatch(BatchProbe.self) { events, conn in
            for (e, envelope) in events where envelope.subject == marker { try await conn.query("INSERT INTO applied (seq) VALUES (\(e.seq))") }
        }
        handlers.onBatch(LatestProbe.self, idempotent: true) { events, conn in
            let mine = events.filter { $0.envelope.subject == marker }
            latestCalls.withLock { $0 += mine.count }
            for (e, _) in mine {
                try await conn.query(
                    "INSERT INTO latest (k, seq) VALUES (\(e.key), \(e.seq)) ON CONFLICT (k) DO UPDATE SET seq = greatest(latest.seq, excluded.seq)")
            }
        }
        handlers.on(SingleProbe.self) { e, envelope, conn in
            if envelope.subject == marker { try await conn.query("INSERT INTO applied (seq) VALUES (\(e.seq))") }
        }
        let consumer = try EventConsumerService(
            service: .transaction, kafka: config, producer: producer, pool: pool, handlers: handlers,
            logger: TestStack.quietLogger, maxHandlerAttempts: 1, groupID: "idem-test-\(marker)", topics: [topic])
        let run = Task { try await consumer.run() }
        let recordedSeqs = (0..<100).filter { !($0 % 10 != 9 && ($0 % 3 == 0 || $0 % 10 == 8)) }
        let done = try await TestStack.eventually(timeout: .seconds(60)) {
            let n = try await pool.withConnection { try await $0.query("SELECT count(*) AS n FROM applied") }.first?.int("n") ?? 0
            return latestCalls.withLock { $0 } >= latestSent && n >= recordedSeqs.count
        }
        await consumer.shutdown()
        _ = try? await run.value
        #expect(done)

        #expect(latestCalls.withLock { $0 } == latestSent, "every delivery of an idempotent type reaches its handler, a redelivered id too")
        let applied = try await pool.withConnection { try await $0.query("SELECT seq FROM applied ORDER BY n") }.compactMap { $0.int("seq") }
        #expect(applied == recordedSeqs, "recorded types: once per id, in order, the redelivered id not applied again")
        let latest = try await pool.withConnection { try await $0.query("SELECT k, seq FROM latest ORDER BY k") }
        #expect(Dictionary(uniqueKeysWithValues: latest.compactMap { r in r.string("k").flatMap { k in r.int("seq").map { (k, $0) } } }) == lastSeq)
        let ids = try await pool.withConnection { try await $0.query("SELECT event_id FROM processed_events WHERE starts_with(event_id, \(marker))") }.compactMap { $0.string("event_id") }
        #expect(ids.count == recordedSeqs.count)
        #expect(!ids.contains { $0.contains("-l") }, "no id of the idempotent type is recorded")
    }

    /// Events of types the service does not handle (another service's events on a topic it
    /// reads for one type) are skipped, counted and committed; an unreadable record among
    /// them is not skipped but dead-lettered; the handled event after them is applied. A new
    /// member of the same group starts after all of them.
    @Test func unhandledTypesAreSkippedCountedAndCommitted() async throws {
        try TestStack.require()
        let (pool, drop) = try await scratchPool(prefix: "consumer_skip", probeTables: "CREATE TABLE applied (seq int NOT NULL)")
        defer {
            pool.close()
            Task { await drop() }
        }
        let marker = UUID().uuidString.lowercased()
        let topic = Topic.deadLetter(service: .oob)
        let config = KafkaConfiguration(brokers: TestStack.brokers, clientID: "signet-skip-test")
        let producer = try KafkaProducer(configuration: config, logger: TestStack.quietLogger)
        func message(_ id: String, _ type: String, _ seq: Int) -> KafkaOutgoingMessage {
            EventEnvelope(id: id, source: "/signet/test", type: type, time: Date(), subject: marker, data: Array("{\"seq\":\(seq)}".utf8))
                .kafkaMessage(topic: topic, key: marker)
        }
        let other = OtherProbe.eventType
        var messages = (0..<300).map { message("\(marker)-o\($0)", other, $0) }
        // No specversion: unreadable, so never skipped.
        var unreadable = message("\(marker)-bad", other, 1000)
        unreadable.headers.removeAll { $0.name == CloudEventHeader.specVersion }
        messages.insert(unreadable, at: 150)
        messages.append(message("\(marker)-s1", SingleProbe.eventType, 1))
        for result in await producer.sendAll(messages) { _ = try result.get() }

        let skippedBefore = Self.skippedCount()
        let otherSeen = Mutex(0)
        func handlers() -> EventHandlers {
            var handlers = EventHandlers()
            handlers.on(SingleProbe.self) { e, envelope, conn in
                if envelope.subject == marker { try await conn.query("INSERT INTO applied (seq) VALUES (\(e.seq))") }
            }
            return handlers
        }
        func applied() async throws -> [Int] {
            try await pool.withConnection { try await $0.query("SELECT seq FROM applied ORDER BY seq") }.compactMap { $0.int("seq") }
        }
        let first = try EventConsumerService(
            service: .transaction, kafka: config, producer: producer, pool: pool, handlers: handlers(),
            logger: TestStack.quietLogger, maxHandlerAttempts: 1, groupID: "skip-test-\(marker)", topics: [topic])
        let firstRun = Task { try await first.run() }
        let done = try await TestStack.eventually(timeout: .seconds(60)) { try await applied() == [1] }
        // Then unhandled events only, in batches of their own: nothing after them stores an
        // offset that would cover theirs.
        for result in await producer.sendAll((300..<400).map { message("\(marker)-o\($0)", other, $0) }) { _ = try result.get() }
        let counted = await TestStack.eventually(timeout: .seconds(60)) { Self.skippedCount() - skippedBefore >= 400 }
        let deadLettered = try await findDeadLetter(id: "\(marker)-bad", config: config)
        await first.shutdown()
        _ = try? await firstRun.value
        #expect(done, "the handled event after the skipped ones is applied")
        #expect(deadLettered, "an unreadable record among skippable ones is dead-lettered")
        #expect(counted, "each unhandled event counted as skipped")

        // The same group again, now also handling the other type: nothing of the first run is
        // delivered again (its offsets, the skipped ones' included, were committed).
        var again = handlers()
        again.on(OtherProbe.self) { _, envelope, _ in
            if envelope.subject == marker { otherSeen.withLock { $0 += 1 } }
        }
        let second = try EventConsumerService(
            service: .transaction, kafka: config, producer: producer, pool: pool, handlers: again,
            logger: TestStack.quietLogger, maxHandlerAttempts: 1, groupID: "skip-test-\(marker)", topics: [topic])
        let secondRun = Task { try await second.run() }
        for result in await producer.sendAll([message("\(marker)-s2", SingleProbe.eventType, 2)]) { _ = try result.get() }
        let sentinel = try await TestStack.eventually(timeout: .seconds(60)) { try await applied() == [1, 2] }
        await second.shutdown()
        _ = try? await secondRun.value
        #expect(sentinel)
        #expect(otherSeen.withLock { $0 } == 0, "skipped events were committed: none is delivered to the group again")
    }

    /// The consumers' `skipped` count in this process's registry, all services.
    private static func skippedCount() -> Int {
        MetricsRegistry.shared.render().split(separator: "\n")
            .filter { $0.hasPrefix("signet_events_consumed_total{") && $0.contains(#"outcome="skipped""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }

    /// A scratch database with the common tables and the test's probe tables, and its pool.
    private func scratchPool(prefix: String, probeTables: String) async throws -> (PostgresPool, @Sendable () async -> Void) {
        let (db, drop) = try await TestStack.scratchDatabase(prefix: prefix)
        let pool = TestStack.pool(database: db)
        do {
            try await Migrator.migrate(
                pool: pool, migrations: Outbox.commonMigrations + [Migration(100, "probe", probeTables)], logger: TestStack.quietLogger)
        } catch {
            pool.close()
            await drop()
            throw error
        }
        return (pool, drop)
    }

    private func findDeadLetter(id: String, config: KafkaConfiguration) async throws -> Bool {
        let consumer = try KafkaConsumer(
            configuration: config, groupID: "batch-test-dlq-\(UUID().uuidString)", topics: [Topic.deadLetter(service: .transaction)],
            logger: TestStack.quietLogger)
        let found = Mutex(false)
        let run = Task {
            await consumer.run { record in
                if record.header(CloudEventHeader.id) == id { found.withLock { $0 = true } }
                return true
            }
        }
        let ok = await TestStack.eventually(timeout: .seconds(30)) { found.withLock { $0 } }
        await consumer.shutdown()
        await run.value
        return ok
    }
}
