import FoundationEssentials
import Postgres

/// Purges in bounded batches: each batch a statement of its own (its own transaction, so no
/// lock is held long), repeated while batches come back full, so that a pass keeps up with any
/// rate of inserts instead of removing one batch per pass whatever the backlog.
public enum BatchedDelete {
    /// Rows per batch (the statements' `LIMIT`).
    public static let batchSize = 10_000

    /// Runs `statement` (a `DELETE`, or an `UPDATE` that clears what it selects, of at most
    /// `limit` rows) until one affects fewer than `limit`, at most `maxBatches` times (the rest
    /// waits for the next pass).
    ///
    /// - Returns: rows affected.
    public static func drain(limit: Int = batchSize, maxBatches: Int = 100, on conn: PostgresConnection, _ statement: PostgresQuery) async throws -> Int {
        var total = 0
        for _ in 0..<maxBatches {
            try Task.checkCancellation()
            let deleted = try await conn.query(statement).affectedRows
            total += deleted
            if deleted < limit { break }
        }
        return total
    }
}

/// Single-use challenges (`used_challenges`) past their expiry.
public enum UsedChallenges {
    /// How long a used challenge is kept after its expiry: a replica whose clock runs behind
    /// the purging one's by less than this still finds a replay's row (each also refuses an
    /// expired challenge by its own clock before looking).
    public static let purgeMargin: TimeInterval = 300

    /// Deletes the used challenges that expired more than ``purgeMargin`` before `now`, in
    /// batches. `conn` must not be inside a transaction.
    ///
    /// - Returns: rows deleted.
    @discardableResult
    public static func purge(now: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM used_challenges WHERE challenge_hash IN
                (SELECT challenge_hash FROM used_challenges WHERE expires_at < \(now.addingTimeInterval(-purgeMargin)) LIMIT \(limit))
            """)
    }
}
