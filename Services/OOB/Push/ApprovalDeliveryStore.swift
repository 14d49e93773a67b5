import FoundationEssentials
import Postgres
import Schema
import ServiceKit

/// A row of `approval_deliveries`: one push to one device, or one approval's callback.
struct ApprovalDelivery: Sendable {
    enum Kind: String, Sendable {
        case push
        case callback
    }

    let id: Int64
    let tenant: String
    let approvalId: String
    let kind: Kind
    /// The device a push goes to.
    let deviceId: String?
    /// Attempts made, this one included once claimed.
    let attempts: Int
}

/// The durable queue of approval pushes and callbacks (`approval_deliveries`): rows are written
/// in the transaction that creates the approval (a push per device that may answer and has a
/// push token) or finishes it (its callback), so that a crash between the commit and the send
/// loses nothing. ``ApprovalDeliveryWorker`` claims due rows with a lease (`next_attempt_at`
/// moved past the attempt, `attempts` counted) in a short transaction, sends outside it, and
/// records the outcome: `sent`, `failed`, or `pending` again at the backoff. A claim whose
/// process died is claimed again when its lease ends (at least once: a push or callback may be
/// sent twice, never lost). Rows name approvals and devices by id only: no personal data, no
/// token.
enum ApprovalDeliveryStore {
    static let migration = Migration(
        161, "approval_deliveries",
        """
        CREATE TABLE approval_deliveries (
            id bigserial PRIMARY KEY,
            tenant_id text NOT NULL,
            approval_id text NOT NULL,
            kind text NOT NULL,
            device_id text,
            status text NOT NULL,
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at timestamptz NOT NULL,
            last_error text,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        );
        CREATE INDEX approval_deliveries_due ON approval_deliveries (next_attempt_at) WHERE status = 'pending';
        CREATE INDEX approval_deliveries_by_approval ON approval_deliveries (approval_id);
        """)

    /// Queues the pushes of a new approval: one per device of `devices` with a usable push token.
    ///
    /// - Returns: how many were queued.
    @discardableResult
    static func enqueuePushes(_ approval: StoredApproval, to devices: [StoredDevice], now: Date, on conn: PostgresConnection) async throws -> Int {
        var count = 0
        for device in devices where device.sealedPushToken != nil && device.pushTokenInvalidAt == nil {
            try await conn.query(
                """
                INSERT INTO approval_deliveries (tenant_id, approval_id, kind, device_id, status, next_attempt_at, created_at, updated_at)
                VALUES (\(approval.tenant), \(approval.id), 'push', \(device.id), 'pending', \(now), \(now), \(now))
                """)
            count += 1
        }
        return count
    }

    /// Queues the callback of a finished approval that has a callback URL.
    static func enqueueCallback(_ approval: StoredApproval, now: Date, on conn: PostgresConnection) async throws {
        guard approval.callbackURL != nil else { return }
        try await conn.query(
            """
            INSERT INTO approval_deliveries (tenant_id, approval_id, kind, status, next_attempt_at, created_at, updated_at)
            VALUES (\(approval.tenant), \(approval.id), 'callback', 'pending', \(now), \(now), \(now))
            """)
    }

    /// Claims up to `limit` due rows: each gets one more attempt and a lease until `now + lease`.
    static func claim(now: Date, lease: TimeInterval, limit: Int, on conn: PostgresConnection) async throws -> [ApprovalDelivery] {
        try await conn.query(
            """
            UPDATE approval_deliveries SET attempts = attempts + 1, next_attempt_at = \(now.addingTimeInterval(lease)), updated_at = \(now)
            WHERE id IN (
                SELECT id FROM approval_deliveries WHERE status = 'pending' AND next_attempt_at <= \(now)
                ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING id, tenant_id, approval_id, kind, device_id, attempts
            """
        ).compactMap { row in
            guard let id = row.int64("id"), let tenant = row.string("tenant_id"), let approval = row.string("approval_id"),
                let kind = row.string("kind").flatMap(ApprovalDelivery.Kind.init(rawValue:)), let attempts = row.int("attempts")
            else { return nil }
            return ApprovalDelivery(id: id, tenant: tenant, approvalId: approval, kind: kind, deviceId: row.string("device_id"), attempts: attempts)
        }
    }

    /// Records the outcome of an attempt: `sent`, `failed` (with why), or due again at `retryAt`.
    static func record(_ id: Int64, status: String, error: String?, retryAt: Date? = nil, now: Date, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE approval_deliveries SET status = \(status), last_error = \(error), next_attempt_at = \(retryAt ?? now), updated_at = \(now)
            WHERE id = \(id)
            """)
    }

    /// Whether any push of the approval was sent or may still be: false once every push
    /// failed (and when it had none).
    static func mayStillReach(_ approvalId: String, on conn: PostgresConnection) async throws -> Bool {
        try await !conn.query(
            "SELECT 1 FROM approval_deliveries WHERE approval_id = \(approvalId) AND kind = 'push' AND status IN ('pending', 'sent') LIMIT 1"
        ).isEmpty
    }

    /// Deletes finished rows last changed before `cutoff`, in batches of `limit`
    /// (``BatchedDelete``; found by `approval_deliveries_finished`). `conn` must not be inside
    /// a transaction.
    ///
    /// - Returns: how many were deleted.
    @discardableResult
    static func purgeFinished(before cutoff: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM approval_deliveries WHERE id IN
                (SELECT id FROM approval_deliveries WHERE status <> 'pending' AND updated_at < \(cutoff) LIMIT \(limit))
            AND status <> 'pending' AND updated_at < \(cutoff)
            """)
    }
}
