import Foundation
import Postgres
import ServiceKit
import Testing
import TestSupport
@testable import OOBService

/// The expirer's purges, over a scratch database: each takes a backlog of several batches in
/// one pass (batches of 2 here), and leaves what is still kept (in progress, pending, not yet
/// past its retention or expiry).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct HousekeepingTests {
    @Test func eachPurgeTakesABacklogOfSeveralBatchesAndKeepsTheRest() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let pool = f.h.context.pool
        let now = Date()
        let cutoff = now.addingTimeInterval(-3600)
        // Rows 1–5 are past the cutoff and finished (or expired); 6 is finished but recent;
        // 7 is old but still in progress (or pending).
        try await pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO approvals (id, tenant_id, username, level, action, resource, details_hash, number_matching, status, revision,
                    created_at, expires_at, updated_at)
                SELECT 'hk' || g, 'acme', 'user' || g, 'ENTRY', 'login', 'web', '\\x00'::bytea, false,
                    CASE WHEN g = 7 THEN 'IN_PROGRESS' ELSE 'REJECTED' END, 1, \(now)::timestamptz - interval '1 day', \(now)::timestamptz + interval '1 day',
                    \(now)::timestamptz - CASE WHEN g = 6 THEN interval '1 minute' ELSE interval '1 day' END
                FROM generate_series(1, 7) g
                """)
            try await conn.query(
                """
                INSERT INTO approval_deliveries (tenant_id, approval_id, kind, status, next_attempt_at, created_at, updated_at)
                SELECT 'acme', 'hk' || g, 'push', CASE WHEN g = 7 THEN 'pending' ELSE 'sent' END, \(now), \(now)::timestamptz - interval '1 day',
                    \(now)::timestamptz - CASE WHEN g = 6 THEN interval '1 minute' ELSE interval '1 day' END
                FROM generate_series(1, 7) g
                """)
            try await conn.query(
                """
                INSERT INTO qr_sessions (id, tenant_id, purpose, qr_type, watch_token_hash, status, revision, created_at, expires_at, updated_at)
                SELECT 'hk' || g, 'acme', 'signin', 'LOGIN', '\\x00'::bytea, 'EXPIRED', 1, \(now)::timestamptz - interval '1 day',
                    \(now)::timestamptz - CASE WHEN g >= 6 THEN interval '1 minute' ELSE interval '1 day' END, \(now)
                FROM generate_series(1, 7) g
                """)
            try await conn.query(
                """
                INSERT INTO trucodes (id, tenant_id, status, created_at, expires_at, updated_at)
                SELECT 'hk' || g, 'acme', 'EXPIRED', \(now)::timestamptz - interval '1 day',
                    \(now)::timestamptz - CASE WHEN g >= 6 THEN interval '1 minute' ELSE interval '1 day' END, \(now)
                FROM generate_series(1, 7) g
                """)
            try await conn.query(
                """
                INSERT INTO device_proof_nonces (tenant_id, holder, nonce, expires_at)
                SELECT 'acme', 'holder', 'n' || g, \(now)::timestamptz + CASE WHEN g >= 6 THEN interval '1 minute' ELSE interval '-1 minute' END
                FROM generate_series(1, 7) g
                """)
        }
        @Sendable func left(_ table: String) async throws -> [String] {
            let sql: PostgresQuery
            switch table {
            case "approval_deliveries": sql = "SELECT approval_id AS id FROM approval_deliveries ORDER BY approval_id"
            case "device_proof_nonces": sql = "SELECT nonce AS id FROM device_proof_nonces ORDER BY nonce"
            case "approvals": sql = "SELECT id FROM approvals WHERE id LIKE 'hk%' ORDER BY id"
            case "qr_sessions": sql = "SELECT id FROM qr_sessions ORDER BY id"
            default: sql = "SELECT id FROM trucodes ORDER BY id"
            }
            return try await pool.withConnection { try await $0.query(sql) }.compactMap { $0.string("id") }
        }
        let purged = try await pool.withConnection { conn in
            [
                try await StoredApproval.purgeFinished(before: cutoff, limit: 2, on: conn),
                try await ApprovalDeliveryStore.purgeFinished(before: cutoff, limit: 2, on: conn),
                try await StoredQRSession.purge(expiredBefore: cutoff, limit: 2, on: conn),
            ]
        }
        #expect(purged == [5, 5, 5])
        #expect(try await DeviceStore(pool: pool, seal: .init(key: Array(repeating: 0, count: 32))).purgeNonces(before: now, limit: 2) == 5)
        #expect(try await left("approvals") == ["hk6", "hk7"])
        #expect(try await left("approval_deliveries") == ["hk6", "hk7"])
        #expect(try await left("qr_sessions") == ["hk6", "hk7"])
        #expect(try await left("trucodes") == ["hk6", "hk7"])
        #expect(try await left("device_proof_nonces") == ["n6", "n7"])
    }

    /// The purges of finished approvals and deliveries find them by an index (they run every
    /// few seconds; without one each read the whole table): with sequential scans made as dear
    /// as the planner allows, the batches' selects still read `approvals_finished` and
    /// `approval_deliveries_finished`, whose predicates theirs imply.
    @Test func finishedRowsAreFoundByAnIndex() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let cutoff = Date()
        let plans = try await f.h.context.pool.withConnection { conn in
            try await conn.query("SET enable_seqscan = off")
            let approvals = try await conn.query(
                "EXPLAIN SELECT id FROM approvals WHERE status <> 'IN_PROGRESS' AND updated_at < \(cutoff) LIMIT 2")
            let deliveries = try await conn.query(
                "EXPLAIN SELECT id FROM approval_deliveries WHERE status <> 'pending' AND updated_at < \(cutoff) LIMIT 2")
            try await conn.query("RESET enable_seqscan")
            return [approvals, deliveries].map { $0.compactMap { $0.string("QUERY PLAN") }.joined(separator: "\n") }
        }
        #expect(plans[0].contains("approvals_finished"), "\(plans[0])")
        #expect(plans[1].contains("approval_deliveries_finished"), "\(plans[1])")
    }

    /// The expirer's pass forgets revoked sessions a day after their revocation (past any
    /// session token's lifetime) and keeps the younger ones: a revocation is answered while a
    /// token of its session can still be valid.
    @Test func revokedSessionsAreKeptADay() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let now = Date()
        try await f.h.context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO revoked_sessions (tenant_id, sid, revoked_at)
                SELECT 'acme', 's' || g, \(now)::timestamptz - CASE WHEN g <= 3 THEN interval '25 hours' ELSE interval '23 hours' END
                FROM generate_series(1, 5) g
                """)
        }
        let revocations = SessionRevocations(pool: f.h.context.pool)
        #expect(try await revocations.isRevoked(tenant: "acme", sid: "s1"))
        let purged = try await f.h.context.pool.withConnection { try await SessionRevocations.purge(now: now, limit: 2, on: $0) }
        #expect(purged == 3)
        #expect(try await !revocations.isRevoked(tenant: "acme", sid: "s1"))
        #expect(try await revocations.isRevoked(tenant: "acme", sid: "s4"))
        #expect(try await !revocations.isRevoked(tenant: "other", sid: "s4"))
    }
}
