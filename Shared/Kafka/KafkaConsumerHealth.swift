import Platform

/// The consumers of this process and how long each has been out of its group (no partition,
/// no member id), for `/readyz`. Every running ``KafkaConsumer`` is registered here from ``KafkaConsumer/run(maxBatch:_:)``
/// until it shuts down.
public final class KafkaConsumerHealth: Sendable {
    public static let shared = KafkaConsumerHealth()

    final class Member: Sendable {
        let groupID: String
        let watch: PlainLock<KafkaAssignmentWatch>
        init(groupID: String) {
            self.groupID = groupID
            watch = PlainLock(KafkaAssignmentWatch(startedAt: .now))
        }
    }

    private let members = PlainLock<[ObjectIdentifier: Member]>([:])

    init() {}

    func register(_ member: Member) { members.withLock { $0[ObjectIdentifier(member)] = member } }
    func unregister(_ member: Member) { _ = members.withLock { $0.removeValue(forKey: ObjectIdentifier(member)) } }

    /// The groups of the registered consumers that have been out of their group for `bound`
    /// or longer (sorted; empty when all are in or `bound` is zero).
    public func unassignedGroups(bound: Duration, now: ContinuousClock.Instant = .now) -> [String] {
        let all = members.withLock { Array($0.values) }
        return all.filter { !$0.watch.withLock { $0.isReady(at: now, bound: bound) } }.map(\.groupID).sorted()
    }
}
