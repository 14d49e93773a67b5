import FoundationEssentials
import Platform
import Postgres
import ServiceKit

/// Deletes transient sign-in data on a schedule: the signals and context (the client's IP
/// among them) of anonymous flows that expired unidentified, at once; flows an hour past their expiry, used
/// challenges five minutes past theirs (``UsedChallenges``), sessions (with their refresh
/// tokens) a day past theirs, and revocations of direct sign-in sessions a day after (past any
/// access token's lifetime, ``SessionRevocations/kept``).
final class TransientDataPurger: Service {
    let name = "transient-data-purger"
    let pool: PostgresPool
    let logger: Logger
    private let schedule: PeriodicTask

    init(pool: PostgresPool, logger: Logger, interval: Duration = .seconds(60)) {
        self.pool = pool
        self.logger = logger
        schedule = PeriodicTask(interval: interval)
    }

    func run() async throws {
        await schedule.run(logger: logger, failure: "purging transient data failed") { try await self.purge(now: Date()) }
    }

    func shutdown() async { await schedule.stopRunning() }

    /// One pass, in bounded batches (``BatchedDelete``) repeated while full: a pass keeps up
    /// with any sign-in rate.
    func purge(now: Date, limit: Int = BatchedDelete.batchSize) async throws {
        try await pool.withConnection { conn in
            // Before the flows: an expired flow's facts go now, the flow an hour later.
            let facts = try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                UPDATE signin_flows SET signals = NULL, context = NULL WHERE id IN (
                    SELECT id FROM signin_flows WHERE (signals IS NOT NULL OR context IS NOT NULL) AND expires_at < \(now) LIMIT \(limit))
                """)
            let flows = try await BatchedDelete.drain(
                limit: limit, on: conn,
                "DELETE FROM signin_flows WHERE id IN (SELECT id FROM signin_flows WHERE expires_at < \(now.addingTimeInterval(-3600)) LIMIT \(limit))")
            let challenges = try await UsedChallenges.purge(now: now, limit: limit, on: conn)
            let sessions = try await BatchedDelete.drain(
                limit: limit, on: conn,
                "DELETE FROM sessions WHERE sid IN (SELECT sid FROM sessions WHERE expires_at < \(now.addingTimeInterval(-86_400)) LIMIT \(limit))")
            let directRevocations = try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                DELETE FROM revoked_direct_sessions WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM revoked_direct_sessions WHERE revoked_at < \(now.addingTimeInterval(-SessionRevocations.kept)) LIMIT \(limit)))
                """)
            let sendsBefore = now.addingTimeInterval(-CodeSendBudget.window)
            let sends = try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                DELETE FROM code_sends WHERE ctid = ANY(ARRAY(SELECT ctid FROM code_sends WHERE sent_at < \(sendsBefore) LIMIT \(limit)))
                AND sent_at < \(sendsBefore)
                """)
            let total = facts + flows + challenges + sessions + directRevocations + sends
            if total > 0 {
                logger.debug("transient data purged", metadata: ["signet.count": "\(total)"])
            }
        }
    }
}
