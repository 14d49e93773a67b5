import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// A row of `trucodes`, and the SQL that reads and writes them.
struct StoredTruCode: Sendable {
    var id: String
    var tenant: String
    var status: String
    /// The user and device that paired it.
    var username: String?
    var deviceId: String?
    var createdAt: Date
    var expiresAt: Date
    var pairedAt: Date?
    var updatedAt: Date

    static let migration = Migration(
        111, "trucodes",
        """
        -- TruCodes (#17): a login page's short-lived, single-use pairing code; the id (128 random
        -- bits) is all its payload carries. A signed-in phone pairs it with its user; the RP's
        -- next call (an approval) names it and uses it up. Deleted an hour after expiry.
        CREATE TABLE trucodes (
            id text PRIMARY KEY,
            tenant_id text NOT NULL,
            status text NOT NULL,
            username text,
            device_id text,
            created_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            paired_at timestamptz,
            updated_at timestamptz NOT NULL
        );
        CREATE INDEX trucodes_expiry ON trucodes (expires_at);
        CREATE INDEX trucodes_user ON trucodes (tenant_id, username) WHERE username IS NOT NULL;
        """)

    var resource: TruCodeResource {
        TruCodeResource(truCodeId: id, status: status, username: username, deviceId: deviceId, expiresAt: expiresAt, pairedAt: pairedAt)
    }

    /// Past its expiry and not used: reads EXPIRED (not written: nothing waits on it).
    func settled(now: Date) -> StoredTruCode {
        var copy = self
        if status != TruCodeStatus.used, expiresAt <= now { copy.status = TruCodeStatus.expired }
        return copy
    }

    func insert(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO trucodes (id, tenant_id, status, created_at, expires_at, updated_at)
            VALUES (\(id), \(tenant), \(status), \(createdAt), \(expiresAt), \(updatedAt))
            """)
    }

    func update(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE trucodes SET status = \(status), username = \(username), device_id = \(deviceId), paired_at = \(pairedAt), updated_at = \(updatedAt)
            WHERE id = \(id) AND tenant_id = \(tenant)
            """)
    }

    /// The code `id` of any tenant (the pairing phone's tenant is compared by the caller), or nil.
    static func load(_ id: String, on conn: PostgresConnection, forUpdate: Bool = false) async throws -> StoredTruCode? {
        guard TruCodeID.isValid(id) else { return nil }
        let rows =
            forUpdate
            ? try await conn.query("SELECT * FROM trucodes WHERE id = \(id) FOR UPDATE")
            : try await conn.query("SELECT * FROM trucodes WHERE id = \(id)")
        guard let row = rows.first else { return nil }
        guard let tenant = row.string("tenant_id"), let status = row.string("status"), let created = row.date("created_at"),
            let expires = row.date("expires_at"), let updated = row.date("updated_at")
        else { throw HTTPError(.truCodeNotFound, detail: "No such TruCode.") }
        return StoredTruCode(
            id: id, tenant: tenant, status: status, username: row.string("username"), deviceId: row.string("device_id"), createdAt: created,
            expiresAt: expires, pairedAt: row.date("paired_at"), updatedAt: updated)
    }

    /// Deletes codes that expired before `cutoff`, in batches of `limit` (``BatchedDelete``).
    /// `conn` must not be inside a transaction.
    @discardableResult
    static func purge(expiredBefore cutoff: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            "DELETE FROM trucodes WHERE id IN (SELECT id FROM trucodes WHERE expires_at < \(cutoff) LIMIT \(limit)) AND expires_at < \(cutoff)")
    }
}
