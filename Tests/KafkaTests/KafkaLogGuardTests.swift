import Synchronization
import Testing
@testable import Kafka

@Suite struct KafkaLogGuardTests {
    @Test func theFirstClusterIDSeenIsNoChange() {
        var g = KafkaLogGuard()
        let changes = [nil, "", "cluster-a", "cluster-a"].map { g.observeCluster($0) }
        #expect(changes == [false, false, false, false])
        #expect(!g.rewindPending)
        #expect(!g.mustRewind(assignedPartitions: 3))
    }

    @Test func anotherClusterRewindsWhatIsAssignedNowOrLater() {
        var g = KafkaLogGuard()
        _ = g.observeCluster("cluster-a")
        let changed = g.observeCluster("cluster-b")
        #expect(changed)
        // Not assigned yet (the new coordinator has no group): the rewind waits for the rejoin.
        #expect(!g.mustRewind(assignedPartitions: 0))
        #expect(g.rewindPending)
        let unknown = g.observeCluster(nil)
        #expect(!unknown, "an unknown id is no news")
        #expect(g.mustRewind(assignedPartitions: 2))
        g.rewound()
        #expect(!g.mustRewind(assignedPartitions: 2))
        let same = g.observeCluster("cluster-b")
        #expect(!same)
        let back = g.observeCluster("cluster-a")
        #expect(back, "back to an earlier cluster is a change too")
    }

    @Test(arguments: [
        // position, low, high → action
        (Int64(10), Int64(0), Int64(20), KafkaLogGuard.PositionAction.keep),
        (20, 0, 20, .keep),  // at the end: waiting for the next record
        (0, 0, 0, .keep),  // an empty log
        (5_000, 0, 20, .rewind(to: 0)),  // past the end: the log was replaced or truncated
        (21, 0, 20, .rewind(to: 0)),
        (3, 10, 20, .rewind(to: 10)),  // before the start: deleted by retention
        (-1001, 0, 20, .keep),  // librdkafka's INVALID: nothing consumed yet
        (-2, 0, 20, .keep),  // BEGINNING
        (10, -1, -1, .keep),  // watermarks unknown
        (10, 20, 5, .keep),  // inconsistent watermarks: no decision on them
    ])
    func positionsAgainstWatermarks(_ c: (Int64, Int64, Int64, KafkaLogGuard.PositionAction)) {
        #expect(KafkaLogGuard.check(position: c.0, low: c.1, high: c.2) == c.3)
    }

    @Test func aConsumerIsNotReadyOnceOutOfItsGroupForTheBound() {
        let t0 = ContinuousClock.now
        var w = KafkaAssignmentWatch(startedAt: t0)
        let bound = Duration.seconds(30)
        #expect(w.isReady(at: t0 + .seconds(29), bound: bound), "joining takes a moment")
        #expect(!w.isReady(at: t0 + .seconds(30), bound: bound))
        w.record(assignedPartitions: 3, member: true, at: t0 + .seconds(31))
        #expect(w.isReady(at: t0 + .seconds(500), bound: bound))
        // Partitions and membership lost (the coordinator went away): the clock starts when
        // they were lost, and later turns out of the group do not restart it.
        w.record(assignedPartitions: 0, member: false, at: t0 + .seconds(600))
        w.record(assignedPartitions: 0, member: false, at: t0 + .seconds(620))
        #expect(w.isReady(at: t0 + .seconds(629), bound: bound))
        #expect(!w.isReady(at: t0 + .seconds(630), bound: bound))
        #expect(w.isReady(at: t0 + .seconds(630), bound: .zero), "a zero bound turns the check off")
        w.record(assignedPartitions: 1, member: true, at: t0 + .seconds(640))
        #expect(w.isReady(at: t0 + .seconds(641), bound: bound))
    }

    /// A replica beyond the partition count is a member of its group that owns nothing: ready.
    @Test func anIdleMemberOfAStableGroupStaysReady() {
        let t0 = ContinuousClock.now
        var w = KafkaAssignmentWatch(startedAt: t0)
        w.record(assignedPartitions: 0, member: true, at: t0 + .seconds(2))
        #expect(w.isReady(at: t0 + .seconds(3_600), bound: .seconds(30)))
        #expect(w.outSince == nil)
    }

    @Test func theRegistryNamesOnlyMembersUnassignedForTheBound() {
        let health = KafkaConsumerHealth()
        let t0 = ContinuousClock.now
        let a = KafkaConsumerHealth.Member(groupID: "group-a")
        let b = KafkaConsumerHealth.Member(groupID: "group-b")
        a.watch.withLock { $0 = KafkaAssignmentWatch(startedAt: t0) }
        b.watch.withLock { $0 = KafkaAssignmentWatch(startedAt: t0) }
        health.register(a)
        health.register(b)
        b.watch.withLock { $0.record(assignedPartitions: 2, member: true, at: t0 + .seconds(1)) }
        #expect(health.unassignedGroups(bound: .seconds(30), now: t0 + .seconds(10)) == [])
        #expect(health.unassignedGroups(bound: .seconds(30), now: t0 + .seconds(40)) == ["group-a"])
        #expect(health.unassignedGroups(bound: .zero, now: t0 + .seconds(40)) == [])
        health.unregister(a)
        #expect(health.unassignedGroups(bound: .seconds(30), now: t0 + .seconds(40)) == [])
    }
}
