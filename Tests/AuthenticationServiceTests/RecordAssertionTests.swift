import Crypto
import Foundation
import Postgres
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// `record_assertion`, the durable half of a WebAuthn sign-in (AuthenticationMigrations 102,
/// 130, 192, 196), called as the service calls it, on a scratch database: every outcome, what each
/// leaves behind, and exactly one row for each.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct RecordAssertionTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    static let key: [UInt8] = Array("cose-key-1".utf8)

    struct Call {
        var tenant = "acme"
        var credential: [UInt8]
        var key: [UInt8] = RecordAssertionTests.key
        var challenge: [UInt8] = Array(SHA256.hash(Array(UUID().uuidString.utf8)))
        var signCount: Int64
        var backupState = true
        var eventID = UUID().uuidString
        var traceparent: String? = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        /// The direct route's standing check (migration 196): the user and the method.
        var username: String?
        var method: String?
    }

    /// The rows the function answered, each as (outcome, stored_sign_count).
    static func call(_ h: Harness, _ c: Call, at now: Date) async throws -> [(String?, Int64?)] {
        try await callWithProbation(h, c, at: now).map { ($0.0, $0.1) }
    }

    /// The rows the function answered, each as (outcome, stored_sign_count, probation_until).
    static func callWithProbation(_ h: Harness, _ c: Call, at now: Date) async throws -> [(String?, Int64?, Date?)] {
        let rows = try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT outcome, stored_sign_count, probation_until FROM record_assertion(
                    \(c.tenant), \(PostgresBytes(c.credential)), \(PostgresBytes(c.key)), \(PostgresBytes(c.challenge)),
                    \(now + 300), \(c.signCount), \(c.backupState), \(now),
                    \(c.eventID), 'signet.authentication', \(c.tenant), 'signet.authentication.succeeded.v1', '/signet/authentication', \(c.tenant),
                    \(now), '{"tenantId":"acme"}', \(c.traceparent), \(String?.none), \(c.username), \(c.method))
                """)
        }
        return rows.map { ($0.string("outcome"), $0.int64("stored_sign_count"), $0.date("probation_until")) }
    }

    static func failures(_ h: Harness, consecutive: Int, probationUntil: Date?, lockedAt: Date?) async throws {
        try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO method_failures (tenant_id, username, method, consecutive, probation_until, locked_at, last_failure_at)
                VALUES ('acme', 'ada', 'fido2', \(consecutive), \(probationUntil), \(lockedAt), now())
                ON CONFLICT (tenant_id, username, method) DO UPDATE SET consecutive = EXCLUDED.consecutive,
                    probation_until = EXCLUDED.probation_until, locked_at = EXCLUDED.locked_at
                """)
        }
    }

    static func insertCredential(_ h: Harness, id: [UInt8], signCount: Int64, status: String = "active", cloneSuspected: Bool = false) async throws {
        try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, subject_ref, user_handle, public_key_cose, algorithm, sign_count,
                    backup_eligible, backup_state, transports, status, clone_suspected, registered_at)
                VALUES ('acme', \(PostgresBytes(id)), 'ref-1', '\\x01', \(PostgresBytes(Self.key)), -7, \(signCount),
                    true, false, '{internal}', \(status), \(cloneSuspected), now())
                """)
        }
    }

    static func credential(_ h: Harness, _ id: [UInt8]) async throws -> (count: Int64?, backup: Bool?, lastUsed: Date?) {
        let row = try await h.context.pool.withConnection { conn in
            try await conn.query(
                "SELECT sign_count, backup_state, last_used_at FROM credentials WHERE tenant_id = 'acme' AND credential_id = \(PostgresBytes(id))")
        }.first
        return (row?.int64("sign_count"), row?.bool("backup_state"), row?.date("last_used_at"))
    }

    static func count(_ h: Harness, _ sql: PostgresQuery) async throws -> Int {
        try await h.context.pool.withConnection { try await $0.query(sql) }.first?.int("n") ?? -1
    }

    @Test func everyOutcomeAnswersOneRowAndLeavesWhatItShould() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let cred: [UInt8] = [1, 2, 3]
        try await Self.insertCredential(h, id: cred, signCount: 5)

        // The counter moved forward: ok, the presented count back, the event in the outbox.
        let first = Call(credential: cred, signCount: 9)
        let ok = try await Self.call(h, first, at: now)
        #expect(ok.count == 1 && ok.first?.0 == "ok" && ok.first?.1 == 9, "\(ok)")
        let stored = try await Self.credential(h, cred)
        #expect(stored.count == 9 && stored.backup == true && stored.lastUsed == now)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox WHERE event_id = \(first.eventID) AND traceparent = \(first.traceparent) AND tracestate IS NULL AND sent_at IS NULL") == 1)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM used_challenges WHERE challenge_hash = \(PostgresBytes(first.challenge))") == 1)

        // The same challenge again, with a higher count: a replay, reported before the counter,
        // with no count, and nothing written.
        let replay = try await Self.call(h, Call(credential: cred, challenge: first.challenge, signCount: 20), at: now)
        #expect(replay.count == 1 && replay.first?.0 == "challenge_replayed" && replay.first?.1 == nil, "\(replay)")
        #expect(try await Self.credential(h, cred).count == 9)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox") == 1)

        // A counter that did not increase: the stored count back, the counter unchanged, no
        // event; the challenge is spent all the same.
        for presented: Int64 in [9, 3, 0] {
            let c = Call(credential: cred, signCount: presented)
            let r = try await Self.call(h, c, at: now)
            #expect(r.count == 1 && r.first?.0 == "sign_count_not_increased" && r.first?.1 == 9, "\(presented): \(r)")
            #expect(try await Self.count(h, "SELECT count(*) AS n FROM used_challenges WHERE challenge_hash = \(PostgresBytes(c.challenge))") == 1)
        }
        #expect(try await Self.credential(h, cred).count == 9)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox") == 1)

        // An authenticator without a counter: zero stays zero, and that is ok.
        let zero: [UInt8] = [4]
        try await Self.insertCredential(h, id: zero, signCount: 0)
        for _ in 0..<2 {
            let r = try await Self.call(h, Call(credential: zero, signCount: 0, backupState: false), at: now)
            #expect(r.count == 1 && r.first?.0 == "ok" && r.first?.1 == 0, "\(r)")
        }
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox") == 3)

        // Suspended (by status or as a suspected clone): the stored count back, nothing moved.
        let suspended: [UInt8] = [5], clone: [UInt8] = [6]
        try await Self.insertCredential(h, id: suspended, signCount: 2, status: "suspended")
        try await Self.insertCredential(h, id: clone, signCount: 7, cloneSuspected: true)
        for (id, count) in [(suspended, Int64(2)), (clone, 7)] {
            let r = try await Self.call(h, Call(credential: id, signCount: 100), at: now)
            #expect(r.count == 1 && r.first?.0 == "credential_suspended" && r.first?.1 == count, "\(r)")
            #expect(try await Self.credential(h, id).count == count)
        }

        // Not found: no such credential, a deleted one, or another key under the same id.
        let deleted: [UInt8] = [7]
        try await Self.insertCredential(h, id: deleted, signCount: 1, status: "deleted")
        for c in [Call(credential: [9, 9], signCount: 1), Call(credential: deleted, signCount: 2), Call(credential: cred, key: Array("other".utf8), signCount: 50)] {
            let r = try await Self.call(h, c, at: now)
            #expect(r.count == 1 && r.first?.0 == "credential_not_found" && r.first?.1 == nil, "\(r)")
        }
        #expect(try await Self.credential(h, cred).count == 9)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox") == 3)
    }

    /// The direct route's form (migration 196): the user's standing for the method is held in
    /// the same round trip. Locked or on probation refuses before anything is written (the
    /// challenge stays unspent, the counter where it was, no event); clear signs in and clears
    /// the failures, not a lock; without a method (a flow's step, which reserved its guess) the
    /// standing is not read; and the 18-parameter form of 192 still answers for a replica of
    /// the previous release.
    @Test func theDirectRoutesFormHoldsTheStandingInTheSameRoundTrip() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let cred: [UInt8] = [1, 2, 3]
        try await Self.insertCredential(h, id: cred, signCount: 5)
        let rows: PostgresQuery = "SELECT count(*) AS n FROM method_failures"
        let outbox: PostgresQuery = "SELECT count(*) AS n FROM outbox"

        // Locked: refused, nothing written.
        try await Self.failures(h, consecutive: 10, probationUntil: nil, lockedAt: now - 60)
        let locked = Call(credential: cred, signCount: 6, username: "ada", method: "fido2")
        let l = try await Self.callWithProbation(h, locked, at: now)
        #expect(l.count == 1 && l.first?.0 == "method_locked" && l.first?.1 == nil, "\(l)")
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM used_challenges WHERE challenge_hash = \(PostgresBytes(locked.challenge))") == 0)
        #expect(try await Self.credential(h, cred).count == 5)
        #expect(try await Self.count(h, outbox) == 0)

        // On probation: refused with its end, nothing written; another user is not concerned.
        let until = now + 30
        try await Self.failures(h, consecutive: 5, probationUntil: until, lockedAt: nil)
        let p = try await Self.callWithProbation(h, Call(credential: cred, signCount: 6, username: "ada", method: "fido2"), at: now)
        #expect(p.count == 1 && p.first?.0 == "method_probation" && p.first?.2 == until, "\(p)")
        #expect(try await Self.credential(h, cred).count == 5)
        #expect(try await Self.count(h, outbox) == 0)
        let other = try await Self.call(h, Call(credential: cred, signCount: 6, username: "bob", method: "fido2"), at: now)
        #expect(other.first?.0 == "ok", "\(other)")
        #expect(try await Self.count(h, rows) == 1)

        // A flow's step (no method): the standing is not read.
        let step = try await Self.call(h, Call(credential: cred, signCount: 7), at: now)
        #expect(step.first?.0 == "ok", "\(step)")
        #expect(try await Self.count(h, rows) == 1)

        // Probation over: signs in and clears the failures.
        let ok = try await Self.call(h, Call(credential: cred, signCount: 8, username: "ada", method: "fido2"), at: until + 1)
        #expect(ok.first?.0 == "ok" && ok.first?.1 == 8, "\(ok)")
        #expect(try await Self.count(h, rows) == 0)
        #expect(try await Self.count(h, outbox) == 3)

        // A refusal for another reason keeps the failures (the caller counts it).
        try await Self.failures(h, consecutive: 2, probationUntil: nil, lockedAt: nil)
        let stale = try await Self.call(h, Call(credential: cred, signCount: 8, username: "ada", method: "fido2"), at: now)
        #expect(stale.first?.0 == "sign_count_not_increased", "\(stale)")
        #expect(try await Self.count(h, rows) == 1)

        // The previous release's form.
        let old = try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT outcome, stored_sign_count FROM record_assertion(
                    'acme', \(PostgresBytes(cred)), \(PostgresBytes(Self.key)), \(PostgresBytes(Array(SHA256.hash(Array("old".utf8))))),
                    \(now + 300), 9::bigint, true, \(now), 'old-event', 'signet.authentication', 'acme', 'signet.authentication.succeeded.v1',
                    '/signet/authentication', 'acme', \(now), '{}', \(String?.none), \(String?.none))
                """)
        }
        #expect(old.first?.string("outcome") == "ok")
    }
}
