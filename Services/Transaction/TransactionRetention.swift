import FoundationEssentials
import Postgres
import Schema
import ServiceKit

/// The tenants' retention of transactions' evidence: kept from registration's
/// ``TenantRetentionChanged`` events (`retention_settings`), applied by a daily pass that clears
/// the evidence and tcToken of transactions whose last change is older (the transaction, its
/// details and status stay).
enum TransactionRetention {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(TenantRetentionChanged.self) { e, _, conn in
            // A replayed older change must not undo a newer one.
            try await conn.query(
                """
                INSERT INTO retention_settings (tenant_id, transaction_evidence_days, changed_at)
                VALUES (\(e.tenantId), \(e.transactionEvidenceDays), \(e.changedAt))
                ON CONFLICT (tenant_id) DO UPDATE SET transaction_evidence_days = EXCLUDED.transaction_evidence_days,
                    changed_at = EXCLUDED.changed_at
                WHERE retention_settings.changed_at <= EXCLUDED.changed_at
                """)
        }
        return h
    }

    /// One pass, in bounded batches (``BatchedDelete``: each batch its own statement, repeated
    /// while full). `conn` must not be inside a transaction.
    ///
    /// - Returns: transactions whose evidence was cleared.
    @discardableResult
    static func purge(now: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            UPDATE transactions SET evidence = NULL, tc_token = NULL WHERE id IN (
                SELECT t.id FROM transactions t JOIN retention_settings r ON r.tenant_id = t.tenant_id
                WHERE r.transaction_evidence_days IS NOT NULL AND t.status <> 'PENDING' AND (t.evidence IS NOT NULL OR t.tc_token IS NOT NULL)
                    AND t.updated_at < \(now)::timestamptz - make_interval(days => r.transaction_evidence_days)
                LIMIT \(limit))
            """)
    }
}
