import Platform

/// One versioned schema change of a service's database.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(_ version: Int, _ name: String, _ sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies a service's migrations at start-up under a PostgreSQL advisory lock, so that N
/// replicas starting at once apply each migration exactly once.
public enum Migrator {
    /// Advisory lock key shared by every Signet service ("signet.migrations" as bytes).
    static let lockKey: Int64 = 0x7369676E65746D67

    public struct MigrationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Applies every migration whose version is not recorded in `schema_migrations`, each in
    /// its own transaction, in version order.
    ///
    /// - Throws: ``MigrationError`` when versions are not strictly increasing or an applied
    ///   migration's name differs from the code's (a changed history), or the database error.
    @discardableResult
    public static func migrate(pool: PostgresPool, migrations: [Migration], logger: Logger) async throws -> [Int] {
        for (a, b) in zip(migrations, migrations.dropFirst()) where a.version >= b.version {
            throw MigrationError(description: "migration versions must increase: \(a.version) then \(b.version)")
        }
        return try await pool.withConnection { conn in
            // Session-level lock: held across the per-migration transactions below.
            try await conn.query("SELECT pg_advisory_lock(\(lockKey))")
            do {
                try await conn.execute(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """)
                var applied: [Int: String] = [:]
                for row in try await conn.query("SELECT version, name FROM schema_migrations") {
                    if let v = row.int("version") { applied[v] = row.string("name") ?? "" }
                }
                var newlyApplied: [Int] = []
                for m in migrations {
                    if let name = applied[m.version] {
                        guard name == m.name else {
                            throw MigrationError(description: "migration \(m.version) was applied as '\(name)' but the code calls it '\(m.name)'")
                        }
                        continue
                    }
                    try await conn.execute("BEGIN")
                    do {
                        try await conn.execute(m.sql)
                        try await conn.query("INSERT INTO schema_migrations (version, name) VALUES (\(m.version), \(m.name))")
                        try await conn.execute("COMMIT")
                    } catch {
                        try? await conn.execute("ROLLBACK")
                        throw error
                    }
                    logger.notice("migration applied", metadata: [LogKey.migration: "\(m.version) \(m.name)"])
                    newlyApplied.append(m.version)
                }
                try await conn.query("SELECT pg_advisory_unlock(\(lockKey))")
                return newlyApplied
            } catch {
                _ = try? await conn.query("SELECT pg_advisory_unlock(\(lockKey))")
                throw error
            }
        }
    }
}
