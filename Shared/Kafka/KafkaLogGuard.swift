/// Decides when a consumer's positions no longer belong to the log the cluster now serves, so
/// that it starts that log from its beginning instead of skipping what is in it.
///
/// Two ways a log goes away under a consumer:
/// - the cluster is replaced (a development broker restarted without its data; a cluster
///   rebuilt): it reports another cluster id, its logs start again at offset 0, and positions
///   from the old cluster would skip their first records (or land in the middle of them) once
///   the new log has grown past them;
/// - a partition's log is truncated (unclean leader election, a topic deleted and re-created):
///   the position is beyond the high watermark.
///
/// Consumers are idempotent (processed event ids), so reading a log again costs duplicates,
/// never a second effect; skipping loses events. Every rule here prefers the former.
public struct KafkaLogGuard: Sendable, Equatable {
    /// The cluster id seen so far (nil until librdkafka knows one).
    public private(set) var clusterID: String?
    /// The cluster changed and the assigned partitions have not been rewound yet.
    public private(set) var rewindPending = false

    public init() {}

    /// Records the cluster id librdkafka reports now (nil: not known yet, which changes
    /// nothing). Returns true when it differs from the one seen before.
    public mutating func observeCluster(_ id: String?) -> Bool {
        guard let id, !id.isEmpty else { return false }
        defer { clusterID = id }
        guard let previous = clusterID, previous != id else { return false }
        rewindPending = true
        return true
    }

    /// Whether, with `assignedPartitions` owned now, the consumer must rewind them before it
    /// hands over another record. A pending rewind waits for an assignment: partitions
    /// assigned later (by the rejoin the new cluster forces) are rewound then.
    public func mustRewind(assignedPartitions: Int) -> Bool { rewindPending && assignedPartitions > 0 }

    /// The assigned partitions were rewound to their beginnings.
    public mutating func rewound() { rewindPending = false }

    public enum PositionAction: Sendable, Equatable {
        case keep
        /// Seek to this offset (the log's first) and store it, so that a commit made before
        /// the next record is processed does not carry the stale position.
        case rewind(to: Int64)
    }

    /// Compares a partition's next fetch position with its watermarks (`low` the first
    /// offset in the log, `high` the one after the last). A position past the end means the
    /// log was truncated or replaced under the consumer: what is there now was never read,
    /// so it starts again at the beginning. A position before the start (records deleted by
    /// retention) also goes to the beginning, as `auto.offset.reset=earliest` would. Unknown
    /// values (librdkafka's logical offsets are negative) change nothing.
    public static func check(position: Int64, low: Int64, high: Int64) -> PositionAction {
        guard position >= 0, low >= 0, high >= low else { return .keep }
        if position > high || position < low { return .rewind(to: low) }
        return .keep
    }
}

/// How long a consumer has been out of its group, for readiness: owning no partition and not
/// a member either (librdkafka drops the member id when the group session times out, e.g.
/// when the coordinator went away). Such a consumer (its group lost with the coordinator, a
/// rejoin that never completes) consumes nothing while the service looks healthy. A member
/// of a stable group that owns nothing (more replicas than partitions) is in the group, and
/// stays ready.
public struct KafkaAssignmentWatch: Sendable, Equatable {
    /// Since when the consumer is out of its group; nil while it is in.
    public private(set) var outSince: ContinuousClock.Instant?

    /// A consumer starts out of its group (it has not joined yet).
    public init(startedAt: ContinuousClock.Instant) { outSince = startedAt }

    /// Records what librdkafka says now: how many partitions the consumer owns, and whether it
    /// has a member id.
    public mutating func record(assignedPartitions: Int, member: Bool, at now: ContinuousClock.Instant) {
        if assignedPartitions > 0 || member {
            outSince = nil
        } else if outSince == nil {
            outSince = now
        }
    }

    /// False once the consumer has been out of its group for `bound` or longer; a zero or
    /// negative bound turns the check off.
    public func isReady(at now: ContinuousClock.Instant, bound: Duration) -> Bool {
        guard bound > .zero, let since = outSince else { return true }
        return now - since < bound
    }
}
