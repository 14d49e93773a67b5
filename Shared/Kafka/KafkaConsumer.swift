import CRDKafka
import Dispatch
import Foundation
import Platform
import Synchronization

/// A consumed message, copied out of librdkafka.
public struct KafkaRecord: Sendable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
    public let key: [UInt8]?
    public let value: [UInt8]
    public let headers: [(name: String, value: [UInt8])]

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: [UInt8])]) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
    }

    /// The first header `name` as UTF-8 text.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }
}

/// A consumer-group member with at-least-once delivery: offsets are stored only after the
/// handler has finished with a record (and auto-committed from the store), so a crash
/// re-delivers instead of losing. Consumers make the effect idempotent themselves.
///
/// A dedicated thread polls librdkafka and hands records over in batches (what librdkafka has
/// already fetched, up to `maxBatch`), waiting for each batch to be processed: backpressure
/// without unbounded buffering, partition order kept, and one thread hand-off per batch
/// instead of per record.
public final class KafkaConsumer: @unchecked Sendable {
    // @unchecked Sendable: `rk` is immutable and librdkafka's consumer API is thread-safe;
    // other state is behind locks or atomics.
    private let rk: OpaquePointer
    private let running = AtomicFlag(true)
    private let logger: Logger
    private let groupID: String
    private let batches: AsyncStream<[KafkaRecord]>
    private let batchesContinuation: AsyncStream<[KafkaRecord]>.Continuation
    private let processed = DispatchSemaphore(value: 0)
    private let closed = DispatchSemaphore(value: 0)
    private let nextOffsets = Mutex<[String: Int64]>([:])  // "topic/partition" → next offset

    /// - Parameter overrides: librdkafka properties set after the defaults and the
    ///   configuration's (e.g. `auto.offset.reset=latest` for a listener that only cares about
    ///   what happens from now on).
    public init(
        configuration: KafkaConfiguration, groupID: String, topics: [String], logger: Logger, overrides: [String: String] = [:]
    ) throws {
        self.logger = logger
        self.groupID = groupID
        var props: [String: String] = [
            "bootstrap.servers": configuration.brokers,
            "client.id": configuration.clientID,
            "group.id": groupID,
            "enable.auto.commit": "true",
            "enable.auto.offset.store": "false",
            "auto.commit.interval.ms": "500",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "1000",
            "topic.metadata.refresh.interval.ms": "5000",
            // Events should cross services in well under a second.
            "fetch.wait.max.ms": "100",
        ]
        props.merge(configuration.properties) { _, new in new }
        props.merge(overrides) { _, new in new }
        let conf = try makeRDKafkaConf(props)
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: -1, message: stringFromCBuffer(errstr))
        }
        self.rk = rk
        rd_kafka_poll_set_consumer(rk)
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))
        for t in topics { rd_kafka_topic_partition_list_add(list, t, -1) }
        let err = rd_kafka_subscribe(rk, list)
        rd_kafka_topic_partition_list_destroy(list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            rd_kafka_destroy(rk)
            throw KafkaError(err)
        }
        (batches, batchesContinuation) = AsyncStream.makeStream(of: [KafkaRecord].self)
    }

    deinit {
        rd_kafka_destroy(rk)
    }

    /// Consumes until ``shutdown()``, calling `handler` for each record in order. The record's
    /// offset is stored for commit when `handler` returns true; false (only while shutting
    /// down) leaves it uncommitted so that the record is delivered again.
    public func run(_ handler: (KafkaRecord) async -> Bool) async {
        await run(maxBatch: 1) { batch in
            var done = 0
            for record in batch {
                guard await handler(record) else { break }
                done += 1
            }
            return done
        }
    }

    /// Consumes until ``shutdown()``, calling `handler` with batches of consecutive records
    /// (at most `maxBatch`; fewer when librdkafka has no more fetched). `handler` returns how
    /// many leading records of the batch it finished: their offsets are stored for commit; the
    /// rest (only while shutting down) stay uncommitted and are delivered again.
    public func run(maxBatch: Int, _ handler: ([KafkaRecord]) async -> Int) async {
        let limit = max(1, maxBatch)
        let thread = Thread { [self] in
            nameCurrentThread("kafka-consumer")
            pollLoop(maxBatch: limit)
        }
        thread.start()
        for await batch in batches {
            let done = min(max(0, await handler(batch)), batch.count)
            if done > 0 { storeOffsets(batch[..<done]) }
            processed.signal()
        }
    }

    /// Stops polling, commits stored offsets and leaves the group. Waits (on a dedicated
    /// queue) for librdkafka's close to finish.
    public func shutdown() async {
        running.set(false)
        processed.signal()  // wake the poll thread if it waits for a handler
        let closed = self.closed
        await runBlocking(on: DispatchQueue(label: "signet.kafka.consumer.close")) { closed.wait() }
    }

    /// Stores, per partition, the offset after the last of `records` (they are in order).
    private func storeOffsets(_ records: ArraySlice<KafkaRecord>) {
        var next: [String: (topic: String, partition: Int32, offset: Int64)] = [:]
        for r in records { next["\(r.topic)/\(r.partition)"] = (r.topic, r.partition, r.offset + 1) }
        let list = rd_kafka_topic_partition_list_new(Int32(next.count))
        for (_, p) in next {
            let tp = rd_kafka_topic_partition_list_add(list, p.topic, p.partition)
            tp?.pointee.offset = p.offset
        }
        let err = rd_kafka_offsets_store(rk, list)
        rd_kafka_topic_partition_list_destroy(list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            // The partition was revoked meanwhile; its new owner re-delivers the records and
            // the idempotent handler ignores them.
            logger.debug("offset not stored", metadata: [LogKey.error: "\(KafkaError(err))"])
        }
        nextOffsets.withLock { offsets in
            for (key, p) in next { offsets[key] = p.offset }
        }
    }

    // MARK: - Poll thread

    private func pollLoop(maxBatch: Int) {
        var lastLag = DispatchTime.now()
        var assigned = false
        while running.isSet {
            // Until the group has assigned partitions, check on every turn (start-up scripts
            // wait on this gauge); afterwards once a second with the lag.
            if !assigned || DispatchTime.now().uptimeNanoseconds - lastLag.uptimeNanoseconds > 1_000_000_000 {
                assigned = recordAssignment() > 0
                recordLag()
                lastLag = .now()
            }
            // Block (briefly) for the first record, then take what is already fetched.
            var batch: [KafkaRecord] = []
            while batch.count < maxBatch, let msg = rd_kafka_consumer_poll(rk, batch.isEmpty ? 100 : 0) {
                let m = msg.pointee
                if m.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    if m.err != RD_KAFKA_RESP_ERR__PARTITION_EOF {
                        logger.warning("consumer error", metadata: [LogKey.error: "\(KafkaError(m.err))"])
                    }
                    rd_kafka_message_destroy(msg)
                    break
                }
                batch.append(copyRecord(msg))
                rd_kafka_message_destroy(msg)
            }
            if batch.isEmpty { continue }
            batchesContinuation.yield(batch)
            // Wait for the handler; wake periodically to notice shutdown. While we wait the
            // group session stays alive: librdkafka heartbeats on its own threads.
            while running.isSet, processed.wait(timeout: .now() + .milliseconds(200)) == .timedOut {}
        }
        batchesContinuation.finish()
        let err = rd_kafka_consumer_close(rk)  // commits stored offsets, leaves the group
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("consumer close", metadata: [LogKey.error: "\(KafkaError(err))"])
        }
        closed.signal()
    }

    private func copyRecord(_ msg: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaRecord {
        let m = msg.pointee
        let topic = String(cString: rd_kafka_topic_name(m.rkt))
        let value = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        let key = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        var headers: [(name: String, value: [UInt8])] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(msg, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            var i = 0
            var name: UnsafePointer<CChar>?
            var val: UnsafeRawPointer?
            var size = 0
            while i < 64, rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let v = val.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
                headers.append((name.map { String(cString: $0) } ?? "", v))
                i += 1
            }
        }
        return KafkaRecord(topic: topic, partition: m.partition, offset: m.offset, key: key, value: value, headers: headers)
    }

    /// Records how many partitions this member owns; returns the count.
    private func recordAssignment() -> Int {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(rk, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return 0 }
        let count = Int(list.pointee.cnt)
        rd_kafka_topic_partition_list_destroy(list)
        Gauge(label: "signet_kafka_consumer_assigned_partitions", dimensions: [("group", groupID)]).record(count)
        return count
    }

    private func recordLag() {
        let positions = nextOffsets.withLock { $0 }
        for (tp, next) in positions {
            guard let slash = tp.lastIndex(of: "/"), let partition = Int32(tp[tp.index(after: slash)...]) else { continue }
            let topic = String(tp[..<slash])
            var low: Int64 = 0
            var high: Int64 = 0
            // Cached watermarks from fetch responses: does not block.
            if rd_kafka_get_watermark_offsets(rk, topic, partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 {
                Gauge(label: "signet_kafka_consumer_lag", dimensions: [("group", groupID), ("topic", topic), ("partition", String(partition))])
                    .record(Int(max(0, high - next)))
            }
        }
    }
}
