import Foundation
import Platform
import Postgres
import ServiceKit

/// Deletes transient sign-in data on a schedule: flows an hour past their expiry, used
/// challenges past theirs, and sessions (with their refresh tokens) a day past theirs.
final class TransientDataPurger: Service {
    let name = "transient-data-purger"
    let pool: PostgresPool
    let logger: Logger
    let interval: Duration
    private let stop = AsyncSignal()
    private let stopped = AtomicFlag(false)

    init(pool: PostgresPool, logger: Logger, interval: Duration = .seconds(60)) {
        self.pool = pool
        self.logger = logger
        self.interval = interval
    }

    func run() async throws {
        while !stopped.isSet {
            await stop.wait(timeout: interval)
            if stopped.isSet || Task.isCancelled { break }
            do {
                try await purge(now: Date())
            } catch {
                logger.warning("purging transient data failed", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    func shutdown() async {
        stopped.set(true)
        stop.signal()
    }

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
            let total = flows.affectedRows + challenges.affectedRows + sessions.affectedRows
            if total > 0 {
                logger.debug("transient data purged", metadata: ["signet.count": "\(total)"])
            }
        }
    }
}
