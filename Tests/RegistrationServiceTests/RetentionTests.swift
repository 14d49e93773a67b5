import Crypto
import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// Per-tenant retention, in process over a scratch database: the admin API sets it with its
/// event, and a pass deletes deleted registrations past it, nothing else.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct RetentionTests {
    typealias Harness = ServiceHarness<RegistrationService>

    @Test func settingsArePublishedAndAPassDeletesOnlyDeletedRegistrationsPastThem() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        let admin = Harness.adminToken
        #expect(String(decoding: await h.send("GET", "/v1/admin/tenants/acme/retention", bearer: admin).body, as: UTF8.self) == "{}")
        #expect(await h.send("PUT", "/v1/admin/tenants/acme/retention", bearer: admin, json: #"{"deletedRegistrationsDays":0}"#).status == 400)
        #expect(await h.send("PUT", "/v1/admin/tenants/nope/retention", bearer: admin, json: #"{"deletedRegistrationsDays":30}"#).status == 404)
        let put = await h.send("PUT", "/v1/admin/tenants/acme/retention", bearer: admin, json: #"{"deletedRegistrationsDays":30,"transactionEvidenceDays":90}"#)
        #expect(put.status == 200)
        let event = try #require(try await h.published().last { $0.type == TenantRetentionChanged.eventType })
        #expect(try EventCoding.decode(TenantRetentionChanged.self, from: Array(event.data.utf8)).settings == RetentionSettings(deletedRegistrationsDays: 30, transactionEvidenceDays: 90))
        #expect(String(decoding: await h.send("GET", "/v1/admin/tenants/acme/retention", bearer: admin).body, as: UTF8.self)
            == #"{"deletedRegistrationsDays":30,"transactionEvidenceDays":90}"#)

        // Three credentials: deleted 31 days ago, deleted yesterday, active.
        let store = CredentialStore(context: h.context)
        let handle = SecureRandom.bytes(32)
        let ids = (0..<3).map { _ in SecureRandom.bytes(16) }
        for id in ids {
            try await store.register(CredentialManagementTests.credential(id, handle: handle), challenge: SecureRandom.bytes(32), challengeExpiresAt: Date() + 300, at: Date())
        }
        let now = Date()
        try await store.deregister(tenant: "acme", username: "alice", credentialID: ids[0], at: now)
        try await store.deregister(tenant: "acme", username: "alice", credentialID: ids[1], at: now)
        let methods = MethodStore(context: h.context)
        let oldMethod = "m_" + Hex.encode(SecureRandom.bytes(16))
        try await methods.insert(.init(id: oldMethod, tenant: "acme", username: "alice", type: "totp", sealedSecret: [1], createdAt: now), delivery: nil)
        try await methods.remove(id: oldMethod, tenant: "acme", username: "alice", at: now)
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE credentials SET deleted_at = \(now - 31 * 86_400) WHERE credential_id = \(PostgresBytes(ids[0]))")
            try await conn.query("UPDATE credentials SET deleted_at = \(now - 86_400) WHERE credential_id = \(PostgresBytes(ids[1]))")
            try await conn.query("UPDATE user_methods SET deleted_at = \(now - 31 * 86_400) WHERE id = \(oldMethod)")
        }

        #expect(try await RetentionStore(context: h.context).purge(now: now) == 2)
        let left = try await h.context.pool.withConnection { try await $0.query("SELECT credential_id, status FROM credentials ORDER BY status") }
        #expect(left.compactMap { $0.bytes("credential_id") }.sorted { $0.lexicographicallyPrecedes($1) } == [ids[1], ids[2]].sorted { $0.lexicographicallyPrecedes($1) })
        #expect(try await h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM user_methods") }.first?.int("n") == 0)
        #expect(try await RetentionStore(context: h.context).purge(now: now) == 0)
    }

    /// The registrations' used challenges: once past their expiry by the purge margin they go
    /// with the pass; the three registrations' own (expiring in five minutes) stay.
    @Test func aPassDeletesUsedChallengesPastTheirExpiry() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        let store = CredentialStore(context: h.context)
        let handle = SecureRandom.bytes(32)
        for _ in 0..<3 {
            try await store.register(
                CredentialManagementTests.credential(SecureRandom.bytes(16), handle: handle), challenge: SecureRandom.bytes(32),
                challengeExpiresAt: Date() + 300, at: Date())
        }
        let now = Date()
        try await h.context.pool.withConnection { conn in
            for (byte, expired) in [(UInt8(1), UsedChallenges.purgeMargin + 1), (2, UsedChallenges.purgeMargin + 3600), (3, UsedChallenges.purgeMargin - 60)] {
                try await conn.query(
                    "INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes([UInt8](repeating: byte, count: 32))), \(now - expired))")
            }
        }
        #expect(try await RetentionStore(context: h.context).purge(now: now) == 2)
        let left = try await h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM used_challenges") }.first?.int("n")
        #expect(left == 4, "the recently expired one (within the margin) and the three live ones should stay")
    }
}
