import CRDKafka
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
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
///
/// The same thread keeps positions honest when the broker loses its log (``KafkaLogGuard``):
/// when the cluster id changes (a new cluster: every log starts again at 0) the assigned
/// partitions, and those assigned by the rejoin that follows, are read again from the
/// beginning; every few seconds each position is compared with the partition's watermarks,
/// and one past the end (a truncated log) goes back to the beginning too. And it records how
/// long the consumer has been out of its group (no partition, no member id), which `/readyz`
/// reports (``KafkaConsumerHealth``).
///
/// The consumer rejoins its group with a new librdkafka client when the cluster changes, and
/// when it has been out of its group for ``rejoinAfterSeconds`` (doubled after each rejoin
/// that does not help, up to 5 minutes):
/// librdkafka 2.0.2 keeps the group coordinator's old address when a broker comes back on
/// another one (the development broker after a restart), and retries it forever, so the
/// member would own nothing again without a new client. The old client is destroyed without
/// committing (its positions belong to the old log) or leaving (its coordinator is gone).
public final class KafkaConsumer: @unchecked Sendable {
    // @unchecked Sendable: librdkafka's consumer API is thread-safe; the client is replaced
    // only by the poll thread, while no batch is out (so `storeOffsets` cannot run), and is
    // read under its lock; other state is behind locks or atomics.
    private let client: Mutex<RDKafkaHandle>
    private var rk: OpaquePointer { client.withLock { $0.rk } }
    private let properties: [String: String]
    private let topics: [String]
    private let running = AtomicFlag(true)
    private let logger: Logger
    private let groupID: String
    private let batches: AsyncStream<[KafkaRecord]>
    private let batchesContinuation: AsyncStream<[KafkaRecord]>.Continuation
    private let processed = DispatchSemaphore(value: 0)
    private let closed = DispatchSemaphore(value: 0)
    private let nextOffsets = Mutex<[String: Int64]>([:])  // "topic/partition" → next offset
    /// How long this consumer has been out of its group, for readiness (``KafkaConsumerHealth``).
    private let health: KafkaConsumerHealth.Member
    /// With `startingNow`: where partitions without a committed offset start.
    let startPositions: KafkaStartPositions?

    /// - Parameters:
    ///   - overrides: librdkafka properties set after the defaults and the configuration's
    ///     (e.g. `auto.offset.reset=latest` for a listener that only cares about what happens
    ///     from now on).
    ///   - startingNow: a partition without a committed offset starts at the end its log had
    ///     when ``run(maxBatch:skipping:_:)`` started, not where `auto.offset.reset` puts it when
    ///     the group assigns it, seconds later (``KafkaStartPositions``): for a listener that
    ///     must see everything published from its start on.
    public init(
        configuration: KafkaConfiguration, groupID: String, topics: [String], logger: Logger, overrides: [String: String] = [:],
        startingNow: Bool = false
    ) throws {
        self.logger = logger
        self.groupID = groupID
        let startPositions = startingNow ? KafkaStartPositions(logger: logger) : nil
        self.startPositions = startPositions
        health = KafkaConsumerHealth.Member(groupID: groupID)
        var props: [String: String] = [
            "bootstrap.servers": configuration.brokers,
            "client.id": configuration.clientID,
            "group.id": groupID,
            "enable.auto.commit": "true",
            "enable.auto.offset.store": "false",
            "auto.commit.interval.ms": "500",
            // No committed offset, or one outside the log (out of range): start at the
            // beginning. Consumers are idempotent, so this costs duplicates, never a skip.
            "auto.offset.reset": "earliest",
            "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "1000",
            "topic.metadata.refresh.interval.ms": "5000",
            // Events should cross services in well under a second.
            "fetch.wait.max.ms": "100",
        ]
        props.merge(configuration.properties) { _, new in new }
        props.merge(overrides) { _, new in new }
        properties = props
        self.topics = topics
        client = Mutex(RDKafkaHandle(rk: try Self.makeClient(properties: props, topics: topics, startPositions: startPositions)))
        (batches, batchesContinuation) = AsyncStream.makeStream(of: [KafkaRecord].self)
    }

    deinit {
        rd_kafka_destroy(rk)
    }

    /// A new librdkafka consumer, subscribed to `topics` (its assignments through
    /// `startPositions` when given: the consumer keeps it alive).
    private static func makeClient(properties: [String: String], topics: [String], startPositions: KafkaStartPositions?) throws -> OpaquePointer {
        let conf = try makeRDKafkaConf(properties)
        if let startPositions {
            rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(startPositions).toOpaque())
            rd_kafka_conf_set_rebalance_cb(conf, kafkaStartPositionsRebalance)
        }
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: -1, message: stringFromCBuffer(errstr))
        }
        rd_kafka_poll_set_consumer(rk)
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))
        for t in topics { rd_kafka_topic_partition_list_add(list, t, -1) }
        let err = rd_kafka_subscribe(rk, list)
        rd_kafka_topic_partition_list_destroy(list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            rd_kafka_destroy(rk)
            throw KafkaError(err)
        }
        return rk
    }

    /// How long a consumer out of its group waits before it rejoins with a new client (below
    /// the default readiness bound, so that a recovery does not show).
    static let rejoinAfterSeconds = 15.0

    /// Replaces the client with a new one that bootstraps and joins the group afresh (poll
    /// thread only). The old one is destroyed without a consumer close: no commit of positions
    /// from another log, no wait for a coordinator that is gone. False if no new client could
    /// be made (the old one stays).
    private func rejoin(reason: String) -> Bool {
        let fresh: RDKafkaHandle
        do {
            fresh = RDKafkaHandle(rk: try Self.makeClient(properties: properties, topics: topics, startPositions: startPositions))
        } catch {
            logger.error("consumer could not make a new client", metadata: ["signet.kafka.group": .string(groupID), LogKey.error: "\(error)"])
            return false
        }
        let old = client.withLock { current in
            defer { current = fresh }
            return current
        }
        logger.warning("consumer rejoins its group with a new client", metadata: ["signet.kafka.group": .string(groupID), "signet.reason": .string(reason)])
        rd_kafka_destroy_flags(old.rk, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
        nextOffsets.withLock { $0 = [:] }
        return true
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
    ///
    /// `skipping`, called on the poll thread with each batch first: true when `handler` would
    /// do nothing with any of its records but count them done (event types the consumer does
    /// not handle), after doing what it does for skipped records (counting them). The poll
    /// thread then stores the batch's offsets itself: no hand-over to the handler's task and
    /// back. It must not block; on false the batch goes to `handler` as usual.
    public func run(maxBatch: Int, skipping: (@Sendable ([KafkaRecord]) -> Bool)? = nil, _ handler: ([KafkaRecord]) async -> Int) async {
        let limit = max(1, maxBatch)
        let body: @Sendable () -> Void = { [self] in
            nameCurrentThread("kafka-consumer")
            pollLoop(maxBatch: limit, skipping: skipping)
        }
        health.watch.withLock { $0 = KafkaAssignmentWatch(startedAt: .now) }
        KafkaConsumerHealth.shared.register(health)
        defer { KafkaConsumerHealth.shared.unregister(health) }
        startDetachedThread(body)
        for await batch in batches {
            let done = min(max(0, await handler(batch)), batch.count)
            if done > 0 { storeOffsets(batch[..<done]) }
            processed.signal()
        }
    }

    /// How long ``shutdown()`` waits for librdkafka's close. With the broker or the group
    /// coordinator gone, `rd_kafka_consumer_close` waits up to the session timeout (10 s here)
    /// for a coordinator that will not answer, and every service stopped after the consumer
    /// waits behind it.
    static let closeWaitSeconds = 3

    /// Stops polling, commits stored offsets and leaves the group. Waits (on a dedicated
    /// queue) for librdkafka's close, at most ``closeWaitSeconds``: past that the close goes
    /// on on the poll thread while the shutdown proceeds. Nothing is lost either way: offsets
    /// not committed are read again by the partitions' next owner, and handlers are idempotent.
    /// Returns whether the close finished in time.
    @discardableResult
    public func shutdown() async -> Bool {
        KafkaConsumerHealth.shared.unregister(health)
        running.set(false)
        processed.signal()  // wake the poll thread if it waits for a handler
        let closed = self.closed
        let finished = await runBlocking(on: DispatchQueue(label: "signet.kafka.consumer.close")) {
            closed.wait(timeout: .now() + .seconds(Self.closeWaitSeconds)) == .success
        }
        if !finished {
            logger.warning(
                "Kafka consumer: leaving the group did not finish in \(Self.closeWaitSeconds) s (broker or coordinator unreachable); shutting down without it: uncommitted offsets are read again by the partitions' next owner",
                metadata: ["signet.kafka.group": .string(groupID)])
        }
        return finished
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

    private func pollLoop(maxBatch: Int, skipping: (@Sendable ([KafkaRecord]) -> Bool)?) {
        var lastAssignment = DispatchTime(uptimeNanoseconds: 0)
        var lastPositionCheck = DispatchTime.now()
        var assigned = 0
        var logGuard = KafkaLogGuard()
        // Since when the consumer is out of its group (no partition, no member id; nil while
        // in), and how long it waits before rejoining with a new client (doubled after each
        // rejoin that does not help, up to 5 min). A member of a stable group that owns
        // nothing (more replicas than partitions) is in its group: no churn.
        var outSince: DispatchTime? = .now()
        var rejoinWaits = Backoff(initial: .seconds(Self.rejoinAfterSeconds), maximum: .seconds(300))
        var rejoinAfter = rejoinWaits.next()
        // Before the first poll, which joins the group: the logs' ends as they are now.
        startPositions?.record(topics: topics, rk: rk)
        while running.isSet {
            // Until the group has assigned partitions, check on every turn (start-up scripts
            // and readiness wait on this); afterwards once a second with the lag.
            if assigned == 0 || elapsedSeconds(since: lastAssignment) >= 1 {
                let member: Bool
                (assigned, member) = recordAssignment()
                recordLag()
                lastAssignment = .now()
                if assigned > 0 || member {
                    outSince = nil
                    rejoinWaits.reset()
                    rejoinAfter = rejoinWaits.next()
                } else if outSince == nil {
                    outSince = .now()
                }
            }
            // A new cluster means new logs: positions from the old one would skip the start of
            // the new one (cached value: does not block). Its coordinator is elsewhere too.
            if logGuard.observeCluster(currentClusterID()) {
                logger.warning(
                    "the Kafka cluster changed; its partitions are read again from the beginning",
                    metadata: ["signet.kafka.group": .string(groupID)])
                if rejoin(reason: "cluster changed") { outSince = .now() }
                assigned = recordAssignment().partitions
            } else if let since = outSince, elapsedSeconds(since: since) >= Double(rejoinAfter.components.seconds) {
                _ = rejoin(reason: "out of the group for \(rejoinAfter.components.seconds) s")
                outSince = .now()
                rejoinAfter = rejoinWaits.next()
                assigned = recordAssignment().partitions
            }
            if logGuard.mustRewind(assignedPartitions: assigned) {
                rewindAssignment()
                logGuard.rewound()
            }
            if assigned > 0 && elapsedSeconds(since: lastPositionCheck) >= Self.positionCheckSeconds {
                rewindPositionsPastTheEnd()
                lastPositionCheck = .now()
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
            // The previous batch's offsets are stored (the handler's task stores them before it
            // signals), so these are stored in order.
            if let skipping, skipping(batch) {
                storeOffsets(batch[...])
                continue
            }
            // Records fetched just before a cluster change are still handed over (they may be
            // the old log's last ones); the rewind happens on the next turn.
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

    /// How often the assigned partitions' positions are compared with their watermarks.
    static let positionCheckSeconds = 5.0

    private func elapsedSeconds(since t: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds &- t.uptimeNanoseconds) / 1e9
    }

    /// The cluster id librdkafka has cached from metadata (nil before the first).
    private func currentClusterID() -> String? {
        guard let id = rd_kafka_clusterid(rk, 0) else { return nil }
        defer { rd_kafka_mem_free(rk, id) }
        return String(cString: id)
    }

    /// Seeks every assigned partition to the beginning of its log and stores offset 0, so that
    /// an auto-commit before the next record does not carry a position from another log.
    private func rewindAssignment() {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(rk, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        var targets: [(topic: String, partition: Int32, offset: Int64)] = []
        for i in 0..<Int(list.pointee.cnt) {
            let p = list.pointee.elems[i]
            targets.append((String(cString: p.topic), p.partition, 0))
        }
        seek(targets, toBeginning: true)
    }

    /// Compares each assigned partition's position with its watermarks (a blocking query, on
    /// this thread) and rewinds the ones past the end of their log (see ``KafkaLogGuard``).
    private func rewindPositionsPastTheEnd() {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(rk, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard rd_kafka_position(rk, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        var targets: [(topic: String, partition: Int32, offset: Int64)] = []
        for i in 0..<Int(list.pointee.cnt) {
            let p = list.pointee.elems[i]
            guard p.offset >= 0 else { continue }  // nothing consumed yet
            var low: Int64 = -1
            var high: Int64 = -1
            // One short query per partition; while the broker is away, give up for this turn.
            guard rd_kafka_query_watermark_offsets(rk, p.topic, p.partition, &low, &high, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR else { return }
            if case .rewind(let to) = KafkaLogGuard.check(position: p.offset, low: low, high: high) {
                logger.warning(
                    "consumer position past the end of the log (truncated or replaced); reading it again from the beginning",
                    metadata: [
                        "signet.kafka.group": .string(groupID), LogKey.topic: .string(String(cString: p.topic)),
                        LogKey.partition: .string(String(p.partition)), LogKey.offset: .string(String(p.offset)),
                        "signet.kafka.high_watermark": .string(String(high)),
                    ])
                targets.append((String(cString: p.topic), p.partition, to))
            }
        }
        seek(targets, toBeginning: false)
    }

    /// Seeks the partitions (to their beginning, or to each target's offset) and stores the
    /// offsets as the ones to commit.
    private func seek(_ targets: [(topic: String, partition: Int32, offset: Int64)], toBeginning: Bool) {
        guard !targets.isEmpty else { return }
        let list = rd_kafka_topic_partition_list_new(Int32(targets.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for t in targets {
            rd_kafka_topic_partition_list_add(list, t.topic, t.partition)?.pointee.offset =
                toBeginning ? Int64(RD_KAFKA_OFFSET_BEGINNING) : t.offset
        }
        // Waits for the seek (this is the poll thread); records fetched from the old position
        // are discarded by librdkafka.
        if let error = rd_kafka_seek_partitions(rk, list, 5000) {
            logger.warning("consumer seek failed", metadata: [LogKey.error: .string(String(cString: rd_kafka_error_string(error)))])
            rd_kafka_error_destroy(error)
            return
        }
        let stored = rd_kafka_topic_partition_list_new(Int32(targets.count))
        defer { rd_kafka_topic_partition_list_destroy(stored) }
        for t in targets { rd_kafka_topic_partition_list_add(stored, t.topic, t.partition)?.pointee.offset = t.offset }
        let err = rd_kafka_offsets_store(rk, stored)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.debug("offset not stored after seek", metadata: [LogKey.error: "\(KafkaError(err))"])
        }
        nextOffsets.withLock { offsets in
            for t in targets { offsets["\(t.topic)/\(t.partition)"] = t.offset }
        }
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

    /// Records how many partitions this consumer owns and whether it is a group member (has
    /// a member id); returns both.
    @discardableResult
    private func recordAssignment() -> (partitions: Int, member: Bool) {
        var count = 0
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        if rd_kafka_assignment(rk, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list {
            count = Int(list.pointee.cnt)
            rd_kafka_topic_partition_list_destroy(list)
        }
        var member = false
        if let id = rd_kafka_memberid(rk) {
            member = id.pointee != 0
            rd_kafka_mem_free(rk, id)
        }
        health.watch.withLock { $0.record(assignedPartitions: count, member: member, at: .now) }
        Gauge(label: "signet_kafka_consumer_assigned_partitions", dimensions: [("group", groupID)]).record(count)
        return (count, member)
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
