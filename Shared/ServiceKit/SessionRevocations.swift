import FoundationEssentials
import Postgres
import Schema

/// The sessions the authentication service revoked (`session.revoked.v1`: a logout, a refresh
/// token used twice, the RP's revocation), as a service that accepts session tokens keeps them.
///
/// A session token is an ES256 JWT checked by signature and expiry: without this record a
/// revoked session's access token went on acting for its user (its data fetched or erased, a
/// method or a device added) until it expired (`SIGNET_SESSION_TTL_SECONDS`, 900 s by
/// default). ``SessionTokenVerifier`` built ``SessionTokenVerifier/checkingRevocations(_:)``
/// refuses such a token (401) as soon as the event has reached the service (milliseconds under
/// a working broker). Rows are kept ``kept`` (a day), past any access token's lifetime; no user
/// is named, tenant and session id only.
///
/// Each service that accepts session tokens creates the table with ``migrationSQL`` in a
/// migration of its own, consumes ``handlers`` and purges with ``purge(now:limit:on:)``.
public struct SessionRevocations: Sendable {
    public static let kept: TimeInterval = 86_400

    /// The table (the same in every service that keeps it).
    public static let migrationSQL = """
        -- Sessions the authentication service revoked (session.revoked.v1), kept a day, past
        -- any access token's lifetime: a revoked session's token is refused (SessionRevocations).
        -- No user is named: tenant and session id only.
        CREATE TABLE revoked_sessions (
            tenant_id text NOT NULL,
            sid text NOT NULL,
            revoked_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, sid)
        );
        CREATE INDEX revoked_sessions_by_time ON revoked_sessions (revoked_at);
        """

    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// Records each revocation (idempotent: a redelivered event changes nothing).
    public static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(SessionRevoked.self) { e, _, conn in
            try await conn.query(
                """
                INSERT INTO revoked_sessions (tenant_id, sid, revoked_at) VALUES (\(e.tenantId), \(e.sessionId), \(e.revokedAt))
                ON CONFLICT (tenant_id, sid) DO NOTHING
                """)
        }
        return h
    }

    /// Whether the session `sid` of `tenant` was revoked.
    public func isRevoked(tenant: String, sid: String) async throws -> Bool {
        try await pool.withConnection { conn in
            try await conn.query("SELECT 1 AS revoked FROM revoked_sessions WHERE tenant_id = \(tenant) AND sid = \(sid)").first != nil
        }
    }

    /// The rows past ``kept``, in bounded batches (a retention pass).
    public static func purge(now: Date, limit: Int = 10_000, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM revoked_sessions WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM revoked_sessions WHERE revoked_at < \(now.addingTimeInterval(-kept)) LIMIT \(limit)))
            """)
    }
}
