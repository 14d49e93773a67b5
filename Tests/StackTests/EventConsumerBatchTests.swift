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

/// The event consumer takes what Kafka has fetched in batches: runs of batch-handled events in
/// one transaction and one handler call, other events one at a time, and the same outcome as
/// one record at a time (order, exactly one effect per event id, a bad record dead-lettered
/// alone, no handler run twice because a neighbour failed).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct EventConsumerBatchTests {
    @Test func batchesApplyInOrderOnceEachAndDeadLetterOnlyTheBadRecord() async throws {
        try TestStack.require()
        let (db, drop) = try await TestStack.scratchDatabase(prefix: "consumer_batch")
        defer { Task { await drop() } }
        let pool = TestStack.pool(database: db)
        defer { pool.close() }
        try await Migrator.migrate(
            pool: pool,
            migrations: Outbox.commonMigrations + [
                Migration(100, "probe", "CREATE TABLE applied (n bigserial PRIMARY KEY, seq int NOT NULL, kind text NOT NULL)")
            ], logger: TestStack.quietLogger)

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
