import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// A row of `qr_sessions`, and the SQL that reads and writes them.
struct StoredQRSession: Sendable {
    var id: String
    var tenant: String
    var purpose: String
    var qrType: QRPayloadType
    /// The user the page named, if any: only a device bound to them may claim it.
    var username: String?
    /// The authentication service's sign-in flow the phone completes.
    var signinId: String?
    /// SHA-256 of the watch token.
    var watchTokenHash: [UInt8]
    var status: String
    var revision: Int
    var reason: String?
    /// The device that claimed it, and the user it was bound to then.
    var deviceId: String?
    var claimedUsername: String?
    /// `register`: the credential the phone registered, once checked.
    var credentialId: String? = nil
    /// `bless`: ``QRBlessMode``, and the device that created the code (the old device for
    /// `registerQr`, the new one for `authenticateQr`; the scanner is ``deviceId``).
    var blessMode: String? = nil
    var creatorDeviceId: String? = nil
    var createdAt: Date
    var expiresAt: Date
    var updatedAt: Date

    var isFinished: Bool { QRSessionStatus.finished.contains(status) }

    /// As the RP and other Signet services see it.
    var resource: QRSessionResource {
        QRSessionResource(
            qrSessionId: id, purpose: purpose, status: status, revision: revision, username: claimedUsername, deviceId: deviceId, signinId: signinId,
            reason: reason, credentialId: credentialId, expiresAt: expiresAt, updatedAt: updatedAt)
    }

    /// As the page that shows the code sees it (watch token): no user, no device.
    var resourceForPage: QRSessionResource {
        var r = resource
        r.username = nil
        r.deviceId = nil
        return r
    }

    var changedEvent: QRSessionChanged {
        QRSessionChanged(
            tenantId: tenant, qrSessionId: id, revision: revision, purpose: purpose, status: status, qrType: qrType.rawValue, deviceId: deviceId,
            reason: reason, expiresAt: expiresAt, changedAt: updatedAt)
    }

    func insert(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO qr_sessions (id, tenant_id, purpose, qr_type, username, signin_id, watch_token_hash, status, revision, created_at, expires_at,
                updated_at, bless_mode, creator_device_id)
            VALUES (\(id), \(tenant), \(purpose), \(qrType.rawValue), \(username), \(signinId), \(PostgresBytes(watchTokenHash)), \(status), \(revision),
                \(createdAt), \(expiresAt), \(updatedAt), \(blessMode), \(creatorDeviceId))
            """)
    }

    /// Device blessing (#17): its mode and the device that created the code.
    static let blessMigration = Migration(
        112, "qr_sessions_bless",
        """
        -- Device blessing: registerQr (the old device shows the code) or authenticateQr (the
        -- new device shows it), and the device that created it (the scanner is device_id).
        ALTER TABLE qr_sessions ADD COLUMN bless_mode text;
        ALTER TABLE qr_sessions ADD COLUMN creator_device_id text;
        """)

    /// `register` sessions keep the credential the phone registered (#17).
    static let credentialMigration = Migration(
        110, "qr_sessions_credential",
        """
        -- QR registration: the credential the phone registered, checked with the registration
        -- service before the session SUCCEEDED (a credential id is not personal data).
        ALTER TABLE qr_sessions ADD COLUMN credential_id text;
        """)

    /// Writes status, revision, reason, the claiming device and the registered credential.
    func updateState(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE qr_sessions SET status = \(status), revision = \(revision), reason = \(reason), device_id = \(deviceId),
                claimed_username = \(claimedUsername), credential_id = \(credentialId), updated_at = \(updatedAt)
            , username = \(username) WHERE id = \(id) AND tenant_id = \(tenant)
            """)
    }

    /// The session `id` of any tenant (the scanning phone's tenant is compared by the caller,
    /// so that another tenant's code is refused with its own answer), or nil.
    static func load(_ id: String, on conn: PostgresConnection, forUpdate: Bool = false) async throws -> StoredQRSession? {
        guard QRSessionID.isValid(id) else { return nil }
        let rows =
            forUpdate
            ? try await conn.query("SELECT * FROM qr_sessions WHERE id = \(id) FOR UPDATE")
            : try await conn.query("SELECT * FROM qr_sessions WHERE id = \(id)")
        return try rows.first.map(session(from:))
    }

    /// Sessions not finished past their expiry, locked for the expirer (others skip them).
    static func overdue(before now: Date, limit: Int, on conn: PostgresConnection) async throws -> [StoredQRSession] {
        try await conn.query(
            """
            SELECT * FROM qr_sessions WHERE status IN ('PENDING', 'SCANNED', 'APPROVED') AND expires_at <= \(now) ORDER BY expires_at LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            """
        ).map(session(from:))
    }

    /// Deletes sessions that expired before `cutoff` (their events stay the record), and the
    /// TruCodes with them (both are the expirer's QR housekeeping), in batches of `limit`
    /// (``BatchedDelete``). `conn` must not be inside a transaction.
    ///
    /// - Returns: how many sessions were deleted.
    @discardableResult
    static func purge(expiredBefore cutoff: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await StoredTruCode.purge(expiredBefore: cutoff, limit: limit, on: conn)
        return try await BatchedDelete.drain(
            limit: limit, on: conn,
            "DELETE FROM qr_sessions WHERE id IN (SELECT id FROM qr_sessions WHERE expires_at < \(cutoff) LIMIT \(limit)) AND expires_at < \(cutoff)")
    }

    static func session(from row: PostgresRow) throws -> StoredQRSession {
        guard let id = row.string("id"), let tenant = row.string("tenant_id"), let purpose = row.string("purpose"),
            let qrType = row.string("qr_type").flatMap(QRPayloadType.init(rawValue:)), let hash = row.bytes("watch_token_hash"),
            let status = row.string("status"), let revision = row.int("revision"), let created = row.date("created_at"),
            let expires = row.date("expires_at"), let updated = row.date("updated_at")
        else { throw HTTPError(.qrSessionNotFound, detail: "No such QR session.") }
        return StoredQRSession(
            id: id, tenant: tenant, purpose: purpose, qrType: qrType, username: row.string("username"), signinId: row.string("signin_id"),
            watchTokenHash: hash, status: status, revision: revision, reason: row.string("reason"), deviceId: row.string("device_id"),
            claimedUsername: row.string("claimed_username"), credentialId: row.string("credential_id"), blessMode: row.string("bless_mode"),
            creatorDeviceId: row.string("creator_device_id"), createdAt: created, expiresAt: expires,
            updatedAt: updated)
    }
}
