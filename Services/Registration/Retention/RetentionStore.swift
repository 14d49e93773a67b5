import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// Per-tenant retention of history (`retention_settings`): set with its
/// ``TenantRetentionChanged`` event (the transaction service keeps its part), and this
/// service's own purge of deleted registrations past their retention.
struct RetentionStore: Sendable {
    let context: ServiceContext

    /// The tenant's settings (every kind kept when never set).
    func settings(tenant: String) async throws -> RetentionSettings {
        let row = try await context.pool.withConnection { conn in
            try await conn.query(
                "SELECT deleted_registrations_days, transaction_evidence_days FROM retention_settings WHERE tenant_id = \(tenant)")
        }.first
        return RetentionSettings(deletedRegistrationsDays: row?.int("deleted_registrations_days"), transactionEvidenceDays: row?.int("transaction_evidence_days"))
    }

    /// Stores the tenant's settings with their event.
    ///
    /// - Throws: 404 `tenant_not_found`.
    func put(_ settings: RetentionSettings, tenant: String, at now: Date) async throws {
        try await context.withTransaction { conn in
            guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenant) FOR SHARE").first != nil else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
            }
            try await conn.query(
                """
                INSERT INTO retention_settings (tenant_id, deleted_registrations_days, transaction_evidence_days, updated_at)
                VALUES (\(tenant), \(settings.deletedRegistrationsDays), \(settings.transactionEvidenceDays), \(now))
                ON CONFLICT (tenant_id) DO UPDATE SET deleted_registrations_days = EXCLUDED.deleted_registrations_days,
                    transaction_evidence_days = EXCLUDED.transaction_evidence_days, updated_at = EXCLUDED.updated_at
                """)
            try await Outbox.enqueue(
                TenantRetentionChanged(tenantId: tenant, settings: settings, changedAt: now), source: .registration, subject: tenant, key: tenant, on: conn)
        }
    }

    /// One pass: deleted credentials and methods whose tenant's retention has passed since
    /// their deletion go (in bounded batches). A deleted credential's id may then be registered
    /// again. Used challenges of registrations past their expiry go too (``UsedChallenges``:
    /// a registration checks its ceremony's expiry before its challenge's single use). First,
    /// method setups abandoned for a day are removed with the vault's copy of their address or
    /// number (``MethodStore/removeAbandoned(now:limit:maxBatches:)``): in every tenant,
    /// whatever its retention, which then counts from that removal.
    ///
    /// - Returns: rows deleted, and abandoned setups removed.
    @discardableResult
    func purge(now: Date, limit: Int = BatchedDelete.batchSize) async throws -> Int {
        let abandoned = try await MethodStore(context: context).removeAbandoned(now: now)
        return try await abandoned + context.pool.withConnection { conn in
            let challenges = try await UsedChallenges.purge(now: now, limit: limit, on: conn)
            let credentials = try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                DELETE FROM credentials WHERE (tenant_id, credential_id) IN (
                    SELECT c.tenant_id, c.credential_id FROM credentials c JOIN retention_settings r ON r.tenant_id = c.tenant_id
                    WHERE c.status = 'deleted' AND r.deleted_registrations_days IS NOT NULL
                        AND c.deleted_at < \(now)::timestamptz - make_interval(days => r.deleted_registrations_days)
                    LIMIT \(limit))
                """)
            let methods = try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                DELETE FROM user_methods WHERE id IN (
                    SELECT m.id FROM user_methods m JOIN retention_settings r ON r.tenant_id = m.tenant_id
                    WHERE m.status = 'DELETED' AND r.deleted_registrations_days IS NOT NULL
                        AND m.deleted_at < \(now)::timestamptz - make_interval(days => r.deleted_registrations_days)
                    LIMIT \(limit))
                """)
            let setupSends = try await MethodSetupBudget.purge(now: now, limit: limit, on: conn)
            let revoked = try await SessionRevocations.purge(now: now, limit: limit, on: conn)
            let claims = try await SignUpClaim.purge(now: now, limit: limit, on: conn)
            return credentials + methods + challenges + setupSends + revoked + claims
        }
    }
}
