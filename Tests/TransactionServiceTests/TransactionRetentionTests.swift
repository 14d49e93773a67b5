import Foundation
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import TransactionService

/// The tenants' retention of transactions' evidence, in process: kept from registration's event
/// (a replayed older change does not undo a newer one), applied by a pass to decided
/// transactions whose last change is older.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct TransactionRetentionTests {
    @Test func aPassClearsTheEvidenceOfOldDecidedTransactionsOnly() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        let now = Date()
        try await h.consume(TenantRetentionChanged(tenantId: "shop", settings: RetentionSettings(transactionEvidenceDays: 90), changedAt: now), source: .registration)
        try await h.consume(
            TenantRetentionChanged(tenantId: "shop", settings: RetentionSettings(transactionEvidenceDays: 3000), changedAt: now - 60), source: .registration)
        try await h.context.pool.withConnection { conn in
            for (id, tenant, status, age) in [
                ("t-old", "shop", "CONFIRMED", 91.0), ("t-recent", "shop", "CONFIRMED", 10), ("t-pending", "shop", "PENDING", 200),
                ("t-other-tenant", "cafe", "CONFIRMED", 200),
            ] {
                let at = now - age * 86_400
                try await conn.query(
                    """
                    INSERT INTO transactions (id, tenant_id, username, details, details_hash, status, revision, created_at, expires_at, updated_at,
                        tc_token, evidence)
                    VALUES (\(id), \(tenant), 'alice', '{}', '\\x00', \(status), 1, \(at), \(at + 300), \(at), 'tok', '{"steps":[]}')
                    """)
            }
        }
        #expect(try await h.context.pool.withConnection { try await TransactionRetention.purge(now: now, on: $0) } == 1)
        let kept = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT id FROM transactions WHERE evidence IS NOT NULL AND tc_token IS NOT NULL ORDER BY id")
        }.compactMap { $0.string("id") }
        #expect(kept == ["t-other-tenant", "t-pending", "t-recent"])
        #expect(try await h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM transactions") }.first?.int("n") == 4)
    }
}
