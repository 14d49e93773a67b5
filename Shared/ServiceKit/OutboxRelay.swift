import FoundationEssentials
import Kafka
import Platform
import Postgres
import Synchronization

/// Publishes outbox rows to Kafka and moves them to `outbox_sent`.
///
/// Each batch runs in one transaction that first takes a transaction-scoped advisory lock,
/// so at most one replica publishes at a time and events leave in outbox order (per-key
/// order is what consumers rely on); the batch is published with the idempotent producer and
/// moved to `outbox_sent` in the same transaction once the broker acknowledged it (a delete
/// and an insert without an index entry, where marking it sent in place rewrote it into three
/// indexes). A replica that finds
/// the lock taken waits for its next turn. When the broker is down the batch fails, the
/// rows stay unsent, and the relay retries with backoff: events are delayed, never lost, and
/// the requests that wrote them never wait for Kafka.
///
/// Each sent row records the id of the cluster that acknowledged it. When the producer finds
/// itself on another cluster (the development broker restarted without its log, a cluster
/// rebuilt), the rows acknowledged by an earlier one and still kept (a day) move back to the
/// outbox and are sent again, in outbox order (they keep their ids): the old cluster may have
/// died before anyone consumed them, and consumers drop the duplicates. A real cluster keeps
/// its id, so this never happens there.
///
/// A relay of an earlier release marked rows sent in place (`sent_at` in the outbox). During a
/// rolling upgrade both may run, taking turns under the same lock: this one skips such rows
/// (they are not in `outbox_unsent`), sends them again on a cluster change as that relay did,
/// and its purge deletes them a day after they were sent, as it does in `outbox_sent`.
///
/// Under a steady stream a turn that sent only a few rows is followed by a pause, ended by
/// whichever comes first: ``fill`` more commits notified, or ``linger`` (Kafka's own rule,
/// `batch.size` or `linger.ms`). A turn's fixed cost (a transaction of four statements, a
/// broker round trip, thread wake-ups) is then shared by more events; at high rates the pause
/// ends as soon as a batch worth sending has gathered, at moderate ones an event waits at most
/// `linger`. An event after a quiet spell is sent at once.
///
/// An actor: its state is the loop's (draining, finished, who waits for the end). Request
/// handlers reach it only through ``notify()``, which is nonisolated and synchronous: it
/// signals ``Wakeups`` (an `AsyncStream` buffering one element), so a burst of commits costs
/// one turn and no handler ever waits for the actor. The I/O (libpq, the producer) runs in
/// nonisolated methods, outside the actor, on the relay's own event loop (see ``run()``).
public actor OutboxRelay: Service {
    public nonisolated let name = "outbox-relay"
    nonisolated let pool: PostgresPool
    nonisolated let producer: KafkaProducer
    nonisolated let logger: Logger
    nonisolated let batchSize: Int
    /// The longest pause after a turn that sent fewer than ``fill`` rows (see ``run()``).
    nonisolated let linger: Duration
    /// The commits (notifications) that end a pause early: an eighth of a batch.
    nonisolated var fill: Int { max(1, batchSize / 8) }
    private nonisolated let wakeups = Wakeups()
    /// Woken when ``fill`` commits have been notified since a pause began.
    private nonisolated let filled = Wakeups()
    /// Notifications counted since the relay started, and the count at which a pause ends
    /// (`Int.max` while not pausing). Sequentially consistent: see ``notify()``.
    private nonisolated let notified = Atomic<Int>(0)
    private nonisolated let pauseEndsAt = Atomic<Int>(.max)
    private var draining = false
    private var running = false
    private var finished = false
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []
    /// Publishing turns taken (a turn may find nothing to send): tests check that
    /// notifications coalesce.
    private(set) var turns = 0
    /// Whether ``run()`` has returned (tests of the drain).
    var hasReturned: Bool { finished }
    /// Whether the relay is in a pause after a small turn (tests of the fill rule).
    nonisolated var isPausing: Bool { pauseEndsAt.load(ordering: .sequentiallyConsistent) != .max }
    private nonisolated let backlog: Gauge
    private nonisolated let published: Counter
    private nonisolated let failures: Counter
    private nonisolated let republished: Counter
    /// The cluster id the last turn published to (written by publishing turns only, which
    /// run one at a time; a lock because they run outside the actor).
    private nonisolated let lastCluster = PlainLock<String?>(nil)

    public init(
        pool: PostgresPool, producer: KafkaProducer, logger: Logger, service: String, batchSize: Int = 256, linger: Duration = .milliseconds(20)
    ) {
        self.pool = pool
        self.producer = producer
        self.logger = logger
        self.batchSize = batchSize
        self.linger = linger
        backlog = Gauge(label: "signet_outbox_backlog", dimensions: [("service", service)])
        published = Counter(label: "signet_outbox_published_total", dimensions: [("service", service)])
        failures = Counter(label: "signet_outbox_publish_failures_total", dimensions: [("service", service)])
        republished = Counter(label: "signet_outbox_republished_total", dimensions: [("service", service)])
    }

    /// Advisory lock key of the publishing turn ("signet.outbox" as bytes).
    static let lockKey: Int64 = 0x7369676E65746F62

    /// Asks the relay to publish now (call after committing a transaction with outbox rows).
    /// Synchronous and cheap, from any thread: it never waits for the relay.
    ///
    /// During a pause it also counts toward ``fill``: the one notification that reaches the
    /// pause's end count wakes the relay (the others cost an atomic increment and a load). A
    /// notification that reads the end count just before the pause ends and so does not signal
    /// is harmless: its row was committed before, and the turn after the pause reads it.
    public nonisolated func notify() {
        let n = notified.add(1, ordering: .sequentiallyConsistent).newValue
        if n == pauseEndsAt.load(ordering: .sequentiallyConsistent) { filled.signal() }
        wakeups.signal()
    }

    /// Pauses until ``fill`` more commits are notified or ``linger`` has passed.
    private func pause(_ waiter: inout Wakeups.Waiter) async {
        pauseEndsAt.store(notified.load(ordering: .sequentiallyConsistent) + fill, ordering: .sequentiallyConsistent)
        await waiter.wait(timeout: linger)
        // A notification that read the old end count after the wait ended may still signal:
        // the next pause then ends at once (one turn early, never one missed).
        pauseEndsAt.store(.max, ordering: .sequentiallyConsistent)
    }

    /// Publishes until ``shutdown()`` has been asked and nothing is left unsent, or until the
    /// task is cancelled. Runs on an ``EventLoop`` of its own (one thread, "outbox-relay").
    ///
    /// Cancellation ends it at the top of the next turn or in its wait, whatever the turn
    /// before found: the service group cancels its services when a shutdown outlives its
    /// maximum duration (PostgreSQL or Kafka unreachable while draining, or an earlier service
    /// slow to stop, so that ``shutdown()`` was never reached). The rows not yet published
    /// stay unsent in the outbox table for the next start or another replica; nothing is lost.
    /// The relay then logs one line saying so.
    public func run() async throws {
        // On a loop of its own, the relay's statements are sent without blocking and awaited
        // on that loop's epoll set, and its turns run on the same thread from start to end:
        // no hop to a connection's dispatch queue and back per statement, and one wake-up per
        // statement or delivered batch. Off (SIGNET_DB_NONBLOCKING=0), it runs as before on the
        // cooperative pool, its statements blocking on the connections' queues.
        guard PostgresConnection.nonBlockingOnLoops else { return try await publishUntilDone() }
        let loop = EventLoop(name: "outbox-relay")
        defer { loop.stop() }
        try await withTaskExecutorPreference(loop) { try await publishUntilDone() }
    }

    private func publishUntilDone() async throws {
        running = true
        defer {
            finished = true
            for waiter in finishWaiters { waiter.resume() }
            finishWaiters.removeAll()
        }
        var waiter = wakeups.makeWaiter()
        var fillWaiter = filled.makeWaiter()
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
        var lastBacklog = ContinuousClock.now - .seconds(10)
        var lastMaintenance = ContinuousClock.now
        // The first turn purges too: a replica restarted more often than every ten minutes
        // would otherwise never purge.
        var purgeBacklog = true
        var lastFailure: (any Error)?
        while true {
            // Checked before every turn: a cancelled wait returns at once (its stream has ended),
            // so a relay that ignored cancellation here would retry in a loop with no pause.
            if Task.isCancelled { return stopCancelled(lastFailure: lastFailure) }
            let isDraining = draining
            turns += 1
            do {
                let (sent, _) = try await publishBatch()
                lastFailure = nil
                backoff.reset()
                if ContinuousClock.now - lastBacklog > .seconds(1) {
                    try await recordBacklog()
                    lastBacklog = .now
                }
                // Every ten minutes, and on every turn while a purge's batch came back full:
                // one batch a table a turn, so that a backlog goes between publishing turns
                // instead of holding the relay for one long statement.
                // A purge that fails is logged and tried again at the next ten-minute mark: it
                // must never stand between the outbox and Kafka.
                if purgeBacklog || ContinuousClock.now - lastMaintenance > .seconds(600) {
                    do {
                        purgeBacklog = try await purgeOldRows()
                    } catch {
                        purgeBacklog = false
                        if !Task.isCancelled {
                            logger.warning("outbox relay: purging sent rows failed; will retry in ten minutes", metadata: [LogKey.error: "\(error)"])
                        }
                    }
                    lastMaintenance = .now
                }
                if sent == 0 {
                    if isDraining { return }  // drained: nothing left unsent
                    await waiter.wait(timeout: .milliseconds(250))
                } else if sent < fill && !isDraining && linger > .zero {
                    // Under a steady stream, a short pause lets the next batch gather more rows:
                    // the turn's fixed cost (lock, select, mark sent, commit, broker round trip)
                    // is then shared by more events, for `linger` more latency at most.
                    await pause(&fillWaiter)
                }
            } catch {
                failures.increment()
                lastFailure = error
                // A turn that failed because it was cancelled (a sleep, a statement cut short)
                // is no reason to retry: the loop's check ends the relay without waiting.
                if Task.isCancelled { continue }
                // The backlog is read on turns Kafka failed too: a relay held by a row Kafka
                // refuses shows its backlog growing. (Not after a database failure: the read
                // would only wait for the same database.)
                if error is OutboxPublishError, ContinuousClock.now - lastBacklog > .seconds(1), (try? await recordBacklog()) != nil {
                    lastBacklog = .now
                }
                let delay = backoff.next()
                logger.warning(
                    draining ? "outbox relay: publish failed while draining; will retry until the shutdown's maximum duration" : "outbox relay: publish failed; will retry",
                    metadata: [LogKey.error: "\(error)", "signet.retry_in_ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)"])
                await waiter.wait(timeout: delay)
            }
        }
    }

    /// Logs, once, that the relay stops on cancellation and what stays behind.
    private func stopCancelled(lastFailure: (any Error)?) {
        var metadata: Logger.Metadata = ["signet.outbox.draining": .string(String(draining))]
        if let lastFailure { metadata[LogKey.error] = "\(lastFailure)" }
        logger.warning(
            lastFailure == nil
                ? "outbox relay: cancelled; events not yet published stay in the outbox for the next start"
                : "outbox relay: cancelled while publishing failed; events not yet published stay in the outbox for the next start",
            metadata: metadata)
    }

    /// Stops after everything unsent has been published (bounded by the service group's
    /// maximum shutdown duration, after which the task is cancelled and rows stay for the
    /// next start or another replica). Returns when ``run()`` has returned.
    public func shutdown() async {
        draining = true
        wakeups.signal()
        filled.signal()  // a pause in progress ends now
        guard running, !finished else { return }
        await withCheckedContinuation { finishWaiters.append($0) }
    }

    /// Publishes one batch; returns how many rows were sent and how many failed (0).
    ///
    /// - Throws: ``OutboxPublishError`` when Kafka did not acknowledge a row (the rows before
    ///   it are marked sent; it and the ones after it go again next turn), naming the first
    ///   such row's event type and topic and Kafka's reason, so that a log line says why the
    ///   outbox is not draining.
    @discardableResult
    nonisolated func publishBatch() async throws -> (sent: Int, failed: Int) {
        let turn = try await publishTurn()
        // Only once the requeue (if any) has committed is the cluster taken as known.
        if let cluster = turn.cluster { lastCluster.withLock { $0 = cluster } }
        if let first = turn.firstFailure {
            throw OutboxPublishError(failed: turn.failed, attempted: turn.sent + turn.failed, first: first)
        }
        return (turn.sent, turn.failed)
    }

    /// One turn in one transaction; `cluster` is the cluster id it checked the sent rows
    /// against (nil when it did not hold the lock or knew no cluster); `firstFailure` the
    /// first row Kafka did not acknowledge.
    private nonisolated func publishTurn() async throws -> (sent: Int, failed: Int, cluster: String?, firstFailure: OutboxPublishError.Row?) {
        // Not run again by the pool on a lost connection: the body sends to Kafka. The relay's
        // own loop tries again later (and consumers drop what was sent twice).
        try await pool.withTransaction(retryingOnConnectionLoss: false) { conn in
            // Unsent rows are read through the partial index `outbox_unsent` in a plain index
            // scan, whatever the statistics say: that scan marks the entries of rows published
            // since the last vacuum as dead and skips them afterwards, where a bitmap scan would
            // visit every one of them on every turn (milliseconds per batch at ~1,000 events/s).
            let lock = try await conn.query(
                """
                SELECT pg_try_advisory_xact_lock(\(OutboxRelay.lockKey)) AS locked,
                  set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)
                """)
            guard lock.first?.bool("locked") == true else { return (0, 0, nil, nil) }
            // Read before sending: a row is marked with the cluster known before its send, so
            // one acknowledged by a cluster that was replaced meanwhile is sent again.
            let cluster = producer.clusterID()
            if let cluster, lastCluster.withLock({ $0 }) != cluster {
                let moved = try await conn.query(OutboxRelay.requeue(cluster: cluster)).affectedRows
                // Rows a relay of an earlier release marked sent in place.
                let inPlace = try await conn.query(
                    "UPDATE outbox SET sent_at = NULL WHERE sent_at IS NOT NULL AND sent_cluster <> \(cluster)"
                ).affectedRows
                if moved + inPlace > 0 {
                    republished.increment(by: moved + inPlace)
                    logger.warning(
                        "outbox relay: the Kafka cluster changed; events acknowledged by the previous one are sent again",
                        metadata: ["signet.outbox.requeued": .string(String(moved + inPlace))])
                }
            }
            let rows = try await conn.query(
                """
                SELECT id, event_id, topic, message_key, event_type, source, subject, event_time, data, traceparent, tracestate
                FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT \(batchSize)
                """)
            if rows.isEmpty { return (0, 0, cluster, nil) }
            var sending: [(id: Int64, topic: String, type: String)] = []
            var messages: [KafkaOutgoingMessage] = []
            for row in rows {
                guard let id = row.int64("id"), let eventID = row.string("event_id"), let topic = row.string("topic"),
                    let key = row.string("message_key"), let type = row.string("event_type"), let source = row.string("source"),
                    let time = row.date("event_time"), let data = row.string("data")
                else { continue }
                let envelope = EventEnvelope(id: eventID, source: source, type: type, time: time, subject: row.string("subject"), data: Array(data.utf8),
                    traceparent: row.string("traceparent"), tracestate: row.string("tracestate"))
                sending.append((id, topic, type))
                messages.append(envelope.kafkaMessage(topic: topic, key: key))
            }
            let results = await producer.sendAll(messages)
            // Only the acknowledged prefix counts as sent: rows after a failure go again in
            // the next batch, keeping per-key order (consumers drop the duplicates).
            var sentIDs: [Int64] = []
            var firstFailure: OutboxPublishError.Row?
            for (row, r) in zip(sending, results) {
                if case .failure(let error) = r {
                    firstFailure = OutboxPublishError.Row(eventType: row.type, topic: row.topic, reason: error.description)
                    break
                }
                sentIDs.append(row.id)
            }
            if !sentIDs.isEmpty {
                // A row an erasure deleted meanwhile (UserErasure.scrubOutbox) is simply not there.
                try await conn.query(OutboxRelay.markSent(sentIDs, cluster: cluster ?? producer.clusterID()))
                published.increment(by: sentIDs.count)
            }
            return (sentIDs.count, sending.count - sentIDs.count, cluster, firstFailure)
        }
    }

    private nonisolated func recordBacklog() async throws {
        let rows = try await pool.withConnection { try await $0.query("SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL") }
        backlog.record(rows.first?.int("n") ?? 0)
    }

    /// Sent rows are kept a day for investigation, processed event ids a week for dedupe. Rows
    /// a relay of an earlier release marked sent in place go from the outbox on the same terms.
    /// One batch of at most `limit` rows a table, each its own statement (no long statement, no
    /// long lock, no burst of WAL); rows are addressed by `ctid`, since `outbox_sent` has no key.
    ///
    /// - Returns: whether a batch came back full, so that more may be waiting.
    @discardableResult
    nonisolated func purgeOldRows(limit: Int = BatchedDelete.batchSize) async throws -> Bool {
        try await pool.withConnection { conn in
            let sent = try await conn.query(
                """
                DELETE FROM outbox_sent WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM outbox_sent WHERE sent_at < now() - interval '1 day' LIMIT \(limit)))
                AND sent_at < now() - interval '1 day'
                """
            ).affectedRows
            let sentInPlace = try await conn.query(
                """
                DELETE FROM outbox WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM outbox WHERE sent_at < now() - interval '1 day' LIMIT \(limit)))
                AND sent_at < now() - interval '1 day'
                """
            ).affectedRows
            let processed = try await conn.query(
                """
                DELETE FROM processed_events WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM processed_events WHERE processed_at < now() - interval '7 days' LIMIT \(limit)))
                AND processed_at < now() - interval '7 days'
                """
            ).affectedRows
            return max(sent, sentInPlace, processed) >= limit
        }
    }

    /// Moves the rows `ids` from the outbox to `outbox_sent`, acknowledged by `cluster` now.
    /// Its `affectedRows` is the number of rows moved.
    static func markSent(_ ids: [Int64], cluster: String?) -> PostgresQuery {
        """
        WITH moved AS (
            DELETE FROM outbox WHERE id = ANY(\(PostgresArray(ids)))
            RETURNING id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, traceparent, tracestate)
        INSERT INTO outbox_sent (id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, sent_at, sent_cluster, traceparent, tracestate)
        SELECT id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, now(), \(cluster), traceparent, tracestate FROM moved
        """
    }

    /// Moves the rows of `outbox_sent` that a cluster other than `cluster` acknowledged back
    /// to the outbox, with their ids (outbox order), to be sent again.
    static func requeue(cluster: String) -> PostgresQuery {
        """
        WITH moved AS (
            DELETE FROM outbox_sent WHERE sent_cluster <> \(cluster)
            RETURNING id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, traceparent, tracestate)
        INSERT INTO outbox (id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, traceparent, tracestate)
        SELECT id, event_id, topic, message_key, event_type, source, subject, event_time, data, created_at, traceparent, tracestate FROM moved
        """
    }
}

import Schema

/// Some events of a batch were not acknowledged by the broker.
/// A turn whose rows Kafka did not all acknowledge. Names the first row it did not (its event
/// type and topic, never its data or key) and Kafka's reason: the rows after it wait behind it,
/// so this is why the outbox is not draining (a topic the cluster lacks, a message over the
/// broker's size limit, the cluster unreachable).
struct OutboxPublishError: Error, CustomStringConvertible {
    struct Row: Sendable, Equatable {
        let eventType: String
        let topic: String
        let reason: String
    }
    let failed: Int
    let attempted: Int
    let first: Row
    var description: String {
        "\(failed) of \(attempted) events not acknowledged by Kafka; the first, \(first.eventType) on \(first.topic): \(first.reason) (it and the events after it are sent again next turn)"
    }
}
