import CRDKafka
import Platform
import Synchronization

/// Where the partitions of a "from now on" consumer start when its group has no committed
/// offset for them: at the end each partition's log had when the consumer started running,
/// not at its end when the group assigns it (`auto.offset.reset=latest`), which comes seconds
/// later and skipped every event published in between (a broadcast listener's policy change,
/// the console's feed).
///
/// The ends are read on the consumer's poll thread before its first poll (metadata, then each
/// partition's high watermark: the development broker answers these, not lookups by time). The
/// group's assignment then goes through ``rebalanceCallback`` on the same thread: a partition
/// with a recorded end and no committed offset is assigned at that end, once (a later
/// assignment resumes from what was committed); any other as librdkafka would.
final class KafkaStartPositions: Sendable {
    private let ends = Mutex<[String: Int64]>([:])
    private let recordedFlag = AtomicFlag(false)
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Whether the ends have been read (for tests: what is produced after this is delivered).
    var recorded: Bool { recordedFlag.isSet }

    static func key(_ topic: String, _ partition: Int32) -> String { "\(topic)/\(partition)" }

    /// Reads the end of every partition of `topics` (blocking: the poll thread only). A topic
    /// or partition that cannot be read now is left to `auto.offset.reset`.
    func record(topics: [String], rk: OpaquePointer, timeoutMs: Int32 = 2000) {
        var found: [String: Int64] = [:]
        for topic in topics {
            guard let rkt = rd_kafka_topic_new(rk, topic, nil) else { continue }
            defer { rd_kafka_topic_destroy(rkt) }
            var metadata: UnsafePointer<rd_kafka_metadata>?
            guard rd_kafka_metadata(rk, 0, rkt, &metadata, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { continue }
            defer { rd_kafka_metadata_destroy(metadata) }
            for t in 0..<Int(metadata.pointee.topic_cnt) {
                let entry = metadata.pointee.topics[t]
                guard entry.err == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
                for p in 0..<Int(entry.partition_cnt) {
                    let partition = entry.partitions[p].id
                    var low: Int64 = -1
                    var high: Int64 = -1
                    guard rd_kafka_query_watermark_offsets(rk, topic, partition, &low, &high, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR,
                        high >= 0
                    else { continue }
                    found[Self.key(topic, partition)] = high
                }
            }
        }
        ends.withLock { $0 = found }
        recordedFlag.set(true)
        if found.isEmpty {
            logger.warning("consumer start positions unknown; it starts where its group is assigned", metadata: ["signet.kafka.topics": .string(topics.joined(separator: ","))])
        }
    }

    /// Sets the offset of each partition of `list` that has a recorded end and no committed
    /// offset to that end (the ends used are forgotten). When the committed offsets cannot be
    /// read, nothing is changed.
    func position(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, rk: OpaquePointer) {
        let count = Int(list.pointee.cnt)
        var wanted: [(index: Int, end: Int64)] = []
        ends.withLock { ends in
            for i in 0..<count {
                let p = list.pointee.elems[i]
                if let end = ends.removeValue(forKey: Self.key(String(cString: p.topic), p.partition)) { wanted.append((i, end)) }
            }
        }
        guard !wanted.isEmpty, let committed = rd_kafka_topic_partition_list_copy(list) else { return }
        defer { rd_kafka_topic_partition_list_destroy(committed) }
        guard rd_kafka_committed(rk, committed, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR else {
            logger.warning("committed offsets unknown at assignment; partitions start where their group says")
            return
        }
        for (i, end) in wanted where committed.pointee.elems[i].offset < 0 {
            list.pointee.elems[i].offset = end
        }
    }
}

/// The rebalance callback of a consumer with ``KafkaStartPositions`` (its opaque): assigns
/// with the start positions set (eager protocol, librdkafka's default assignors), revokes
/// everything otherwise. Runs on the thread that polls.
let kafkaStartPositionsRebalance:
    @convention(c) (OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?) -> Void = {
        rk, err, partitions, opaque in
        guard let rk else { return }
        if err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS, let partitions {
            if let opaque {
                Unmanaged<KafkaStartPositions>.fromOpaque(opaque).takeUnretainedValue().position(partitions, rk: rk)
            }
            rd_kafka_assign(rk, partitions)
        } else {
            rd_kafka_assign(rk, nil)
        }
    }
