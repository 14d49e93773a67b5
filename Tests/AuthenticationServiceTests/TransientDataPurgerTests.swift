import Crypto
import Foundation
import Postgres
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// The transient-data purger, one pass over a scratch database: what is past its bound goes,
/// what is not stays.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct TransientDataPurgerTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    static func ids(_ h: Harness, _ sql: PostgresQuery, _ column: String) async throws -> [String] {
        try await h.context.pool.withConnection { try await $0.query(sql) }.compactMap { $0.string(column) }.sorted()
    }

    @Test func onePassDeletesWhatIsPastItsBoundAndKeepsTheRest() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let now = Date()
        try await h.context.pool.withConnection { conn in
            // Flows: purged an hour after they expire.
            for (id, expires) in [("f-old", now - 3_601 - 300), ("f-expired-recently", now - 1_800), ("f-live", now + 300)] {
                try await conn.query(
                    """
                    INSERT INTO signin_flows (id, tenant_id, username, status, matched_rule, sequences, created_at, expires_at)
                    VALUES (\(id), 'acme', 'alice', 'IN_PROGRESS', 'r', '[]', \(expires - 300), \(expires))
                    """)
            }
            // The facts (signals with the client's IP, context) of anonymous flows: erased once
            // the flow has expired, the flow itself kept for its hour.
            for (id, expires) in [("a-expired", now - 60), ("a-live", now + 300)] {
                try await conn.query(
                    """
                    INSERT INTO signin_flows (id, tenant_id, username, status, matched_rule, sequences, created_at, expires_at, signals, context)
                    VALUES (\(id), 'acme', NULL, 'IN_PROGRESS', 'r', '[]', \(expires - 300), \(expires), '{"ip":"192.0.2.7"}', '{}')
                    """)
            }
            // Used challenges: purged five minutes (the margin) after they expire.
            for (hash, expires) in [
                ([UInt8](repeating: 1, count: 32), now - UsedChallenges.purgeMargin - 1), ([UInt8](repeating: 2, count: 32), now + 60),
                ([UInt8](repeating: 3, count: 32), now - UsedChallenges.purgeMargin + 60),
            ] {
                try await conn.query("INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(hash)), \(expires))")
            }
            // Sessions: a day after they expire, with their refresh tokens.
            for (sid, expires) in [("s-old", now - 86_401), ("s-expired-today", now - 3_600), ("s-live", now + 900)] {
                try await conn.query(
                    """
                    INSERT INTO sessions (sid, tenant_id, username, amr, acr, created_at, expires_at)
                    VALUES (\(sid), 'acme', 'alice', '{fido2}', 'fido2', \(expires - 900), \(expires))
                    """)
                try await conn.query(
                    "INSERT INTO refresh_tokens (token_hash, sid, issued_at) VALUES (\(PostgresBytes(SHA256.hash(Array(sid.utf8)))), \(sid), \(expires - 900))")
            }
            // Revocations of direct sign-in sessions: kept a day, past any access token's lifetime.
            for (sid, at) in [("d-old", now - SessionRevocations.kept - 1), ("d-recent", now - 3_600)] {
                try await conn.query("INSERT INTO revoked_direct_sessions (tenant_id, sid, revoked_at) VALUES ('acme', \(sid), \(at))")
            }
            // Code sends: kept for the send budget's window.
            for (client, at) in [("old", now - CodeSendBudget.window - 1), ("recent", now - 60)] {
                try await conn.query("INSERT INTO code_sends (tenant_id, method_id, client, sent_at) VALUES ('acme', 'm_1', \(client), \(at))")
            }
        }

        try await TransientDataPurger(pool: h.context.pool, logger: TestStack.quietLogger).purge(now: now)

        #expect(try await Self.ids(h, "SELECT id FROM signin_flows", "id") == ["a-expired", "a-live", "f-expired-recently", "f-live"])
        #expect(
            try await Self.ids(h, "SELECT id FROM signin_flows WHERE signals IS NOT NULL OR context IS NOT NULL", "id") == ["a-live"],
            "an expired anonymous flow keeps no signals")
        #expect(
            try await Self.ids(h, "SELECT encode(challenge_hash, 'hex') AS h FROM used_challenges", "h")
                == [String(repeating: "02", count: 32), String(repeating: "03", count: 32)])
        #expect(try await Self.ids(h, "SELECT sid FROM sessions", "sid") == ["s-expired-today", "s-live"])
        #expect(try await Self.ids(h, "SELECT sid FROM refresh_tokens", "sid") == ["s-expired-today", "s-live"], "refresh tokens go with their session")
        #expect(try await Self.ids(h, "SELECT client FROM code_sends", "client") == ["recent"])
        #expect(try await Self.ids(h, "SELECT sid FROM revoked_direct_sessions", "sid") == ["d-recent"])

        // A second pass finds nothing more.
        try await TransientDataPurger(pool: h.context.pool, logger: TestStack.quietLogger).purge(now: now)
        #expect(try await Self.ids(h, "SELECT sid FROM sessions", "sid") == ["s-expired-today", "s-live"])
    }

    /// A backlog larger than a batch goes in one pass: batches repeat while they come back
    /// full (one batch per pass fell behind any rate above a batch a minute).
    @Test func onePassDrainsABacklogOfManyBatches() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let now = Date()
        try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at)
                SELECT sha256(int4send(i)), \(now - UsedChallenges.purgeMargin - 10) FROM generate_series(1, 23) i
                """)
            try await conn.query(
                """
                INSERT INTO signin_flows (id, tenant_id, username, status, matched_rule, sequences, created_at, expires_at)
                SELECT 'f-' || i, 'acme', 'alice', 'IN_PROGRESS', 'r', '[]', \(now - 7200), \(now - 3700) FROM generate_series(1, 11) i
                """)
            try await conn.query("INSERT INTO used_challenges (challenge_hash, expires_at) VALUES ('\\x00', \(now + 60))")
        }
        try await TransientDataPurger(pool: h.context.pool, logger: TestStack.quietLogger).purge(now: now, limit: 5)
        #expect(try await Self.ids(h, "SELECT encode(challenge_hash, 'hex') AS h FROM used_challenges", "h") == ["00"])
        #expect(try await Self.ids(h, "SELECT id FROM signin_flows", "id") == [])
    }
}
