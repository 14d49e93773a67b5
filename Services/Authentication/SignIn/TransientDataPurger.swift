import FoundationEssentials
import Platform
import Postgres
import ServiceKit

/// Deletes transient sign-in data on a schedule: flows an hour past their expiry, used
/// challenges past theirs, and sessions (with their refresh tokens) a day past theirs.
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

    /// One pass; bounded batches so that a backlog never holds long locks.
    func purge(now: Date) async throws {
        try await pool.withConnection { conn in
            let flows = try await conn.query(
                "DELETE FROM signin_flows WHERE id IN (SELECT id FROM signin_flows WHERE expires_at < \(now.addingTimeInterval(-3600)) LIMIT 10000)")
            let challenges = try await conn.query(
                """
                DELETE FROM used_challenges WHERE challenge_hash IN
                    (SELECT challenge_hash FROM used_challenges WHERE expires_at < \(now) LIMIT 10000)
                """)
            let sessions = try await conn.query(
                "DELETE FROM sessions WHERE sid IN (SELECT sid FROM sessions WHERE expires_at < \(now.addingTimeInterval(-86_400)) LIMIT 10000)")
            let sends = try await conn.query(
                "DELETE FROM code_sends WHERE sent_at < \(now.addingTimeInterval(-CodeSendBudget.window))")
            let total = flows.affectedRows + challenges.affectedRows + sessions.affectedRows + sends.affectedRows
            if total > 0 {
                logger.debug("transient data purged", metadata: ["signet.count": "\(total)"])
            }
        }
    }
}
