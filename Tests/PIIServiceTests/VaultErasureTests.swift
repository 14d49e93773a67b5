import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import PIIService

/// The vault's part of a user's data: the export decrypts the subject's values (each read
/// audited), the purge destroys the subject's data key (a copy of the ciphertext put back can
/// no longer be read), and a removed method's value leaves the vault.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct VaultErasureTests {
    typealias Harness = ServiceHarness<PIIService>
    static let caller = [(name: "X-Signet-Service", value: "registration")]

    static func store(_ h: Harness, subject: String, kind: String, value: String) async throws -> String {
        let stored = await h.send(
            "POST", "/v1/internal/tenants/acme/pii", bearer: Harness.internalToken, headers: caller,
            json: #"{"subject":"\#(subject)","kind":"\#(kind)","value":"\#(value)"}"#)
        #expect(stored.status == 201)
        return try #require((try JSONSerialization.jsonObject(with: Data(stored.body)) as? [String: Any])?["ref"] as? String)
    }

    static func read(_ h: Harness, _ ref: String) async -> HTTPResponse {
        await h.send("POST", "/v1/internal/tenants/acme/pii/\(ref)/read", bearer: Harness.internalToken, headers: caller, json: #"{"purpose":"test"}"#)
    }

    /// A value its owner no longer refers to is deleted by its reference, in its tenant only;
    /// the call is idempotent and tells nothing of a reference (the same 204 for every one).
    @Test func aValueIsDeletedByItsReference() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let subject = "c3ViamVjdC1mb3Vy"
        let replaced = try await Self.store(h, subject: subject, kind: "name", value: "Dana Scully")
        let kept = try await Self.store(h, subject: subject, kind: "name", value: "Dana K. Scully")
        func delete(_ tenant: String, _ ref: String) async -> Int {
            await h.send("DELETE", "/v1/internal/tenants/\(tenant)/pii/\(ref)", bearer: Harness.internalToken, headers: Self.caller).status
        }
        #expect(await delete("other", kept) == 204)
        #expect(await delete("acme", replaced) == 204)
        #expect(await Self.read(h, replaced).status == 404)
        #expect(await Self.read(h, kept).status == 200)
        #expect(await delete("acme", replaced) == 204)
        #expect(await delete("acme", "pii_" + String(repeating: "0", count: 32)) == 204)
        #expect(await delete("acme", "not-a-reference") == 204)
        #expect(await h.send("DELETE", "/v1/internal/tenants/acme/pii/\(kept)").status == 401)
        #expect(await Self.read(h, kept).status == 200)
    }

    /// An erased user stays erased: once the subject's key is destroyed (by the purge, or by the
    /// internal DELETE even before it held any value), storing under it is refused and no key
    /// comes back. Before, a store recreated the key: a method set up while the erasure went
    /// round the services left its value in the vault under a live key that no user names.
    @Test func anErasedSubjectStaysErased() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let subject = "c3ViamVjdC10aHJlZQ"
        _ = try await Self.store(h, subject: subject, kind: "email", value: "first@example.org")
        let purge = UserPurgeRequested(
            tenantId: "acme", erasureId: "er_" + String(repeating: "c", count: 32),
            subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "erin"), subject: subject, requestedAt: Date())
        try await h.consume(purge, source: .registration)
        func storeAgain(_ subject: String) async -> (status: Int, code: String?) {
            let r = await h.send(
                "POST", "/v1/internal/tenants/acme/pii", bearer: Harness.internalToken, headers: Self.caller,
                json: #"{"subject":"\#(subject)","kind":"email","value":"late@example.org"}"#)
            return (r.status, (try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])?["code"] as? String)
        }
        let refused = await storeAgain(subject)
        #expect(refused.status == 409 && refused.code == "pii_subject_erased", "\(refused)")
        // A subject erased before it held anything: the same.
        let never = "bmV2ZXItc3RvcmVk"
        #expect(await h.send("DELETE", "/v1/internal/tenants/acme/subjects/\(never)", bearer: Harness.internalToken, headers: Self.caller).status == 204)
        #expect(await storeAgain(never).code == "pii_subject_erased")
        let (live, values) = try await h.context.pool.withConnection { conn in
            (
                try await conn.query("SELECT count(*) AS n FROM subject_keys WHERE subject IN (\(subject), \(never)) AND wrapped_key IS NOT NULL").first?.int("n"),
                try await conn.query("SELECT count(*) AS n FROM pii_values WHERE subject IN (\(subject), \(never))").first?.int("n")
            )
        }
        #expect(live == 0 && values == 0)
        // Another subject stores as before.
        _ = try await Self.store(h, subject: "YW5vdGhlci1vbmU", kind: "email", value: "other@example.org")
    }

    @Test func theExportDecryptsAndAuditsAndThePurgeShredsTheKey() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let subject = "c3ViamVjdC1vbmU"
        let email = "erin.\(UInt32.random(in: 0...UInt32.max))@example.org"
        let emailRef = try await Self.store(h, subject: subject, kind: "email", value: email)
        let phoneRef = try await Self.store(h, subject: subject, kind: "phone", value: "+447700900123")
        let otherRef = try await Self.store(h, subject: "b3RoZXI", kind: "phone", value: "+447700900999")

        let exported = await h.send(
            "POST", "/v1/internal/tenants/acme/user-data", bearer: Harness.internalToken, headers: Self.caller,
            json: #"{"username":"erin","subject":"\#(subject)"}"#)
        let text = String(decoding: exported.body, as: UTF8.self)
        #expect(exported.status == 200 && text.contains(email) && text.contains("+447700900123") && !text.contains("+447700900999"))
        let audited = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT ref FROM pii_reads WHERE reader = 'registration' AND purpose = 'user_data_export' ORDER BY ref")
        }.compactMap { $0.string("ref") }
        #expect(audited == [emailRef, phoneRef].sorted())
        // Without the internal token: refused.
        #expect(await h.send("POST", "/v1/internal/tenants/acme/user-data", headers: Self.caller, json: #"{"username":"erin"}"#).status == 401)

        // A backup's copy of the ciphertext, taken before the purge.
        let backup = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT ref, tenant_id, subject, kind, encode(ciphertext, 'hex') AS c, masked, created_at FROM pii_values WHERE ref = \(emailRef)")
        }.first
        let purge = UserPurgeRequested(
            tenantId: "acme", erasureId: "er_" + String(repeating: "a", count: 32),
            subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "erin"), subject: subject, requestedAt: Date())
        try await h.consume(purge, source: .registration)
        let part = try #require(try await h.published().last { $0.type == ErasurePartCompleted.eventType })
        let tallies = try EventCoding.decode(ErasurePartCompleted.self, from: Array(part.data.utf8))
        #expect(tallies.service == "pii" && tallies.tallies == ["dataKeys": 1, "values": 2])
        #expect(await Self.read(h, emailRef).status == 404)
        #expect(await Self.read(h, otherRef).status == 200, "another subject's values stay")

        // The ciphertext put back (a replica, a restored table) cannot be opened: its key is gone.
        let row = try #require(backup)
        try await h.context.pool.withConnection { conn in
            _ = try await conn.query(
                """
                INSERT INTO pii_values (ref, tenant_id, subject, kind, ciphertext, masked, created_at)
                VALUES (\(row.string("ref") ?? ""), \(row.string("tenant_id") ?? ""), \(row.string("subject") ?? ""), \(row.string("kind") ?? ""),
                    decode(\(row.string("c") ?? ""), 'hex'), \(row.string("masked") ?? ""), \(row.date("created_at") ?? Date()))
                """)
        }
        #expect(await Self.read(h, emailRef).status == 404)
        let keys = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT count(*) AS n FROM subject_keys WHERE subject = \(subject) AND wrapped_key IS NOT NULL")
        }.first?.int("n")
        #expect(keys == 0)

        // Another request finds the key already destroyed and deletes only the copy put back (a
        // replay of the same event never runs: the consumer's dedupe).
        try await h.consume(purge, source: .registration)
        let again = try #require(try await h.published().last { $0.type == ErasurePartCompleted.eventType })
        #expect(try EventCoding.decode(ErasurePartCompleted.self, from: Array(again.data.utf8)).tallies == ["values": 1])
    }

    @Test func aRemovedMethodsValueLeavesTheVault() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let ref = try await Self.store(h, subject: "c3ViamVjdC10d28", kind: "email", value: "gone@example.org")
        let removed = MethodChanged(
            tenantId: "acme", subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "erin"), methodId: "m_" + String(repeating: "b", count: 32), type: "email_otp", status: "DELETED",
            piiRef: ref, sealedSecret: nil, lastTotpStep: nil, changedAt: Date())
        var active = removed
        active.status = "ACTIVE"
        try await h.consume(active, source: .registration)
        #expect(await Self.read(h, ref).status == 200)
        try await h.consume(removed, source: .registration)
        #expect(await Self.read(h, ref).status == 404)
    }

    /// A caller's own reference: the value is stored under it, and a reference taken or
    /// withdrawn is refused (409 `pii_ref_unavailable`), so a caller that never heard the answer
    /// can delete the value whether the store has happened, is in flight or never comes.
    /// Withdrawn references are forgotten after a day.
    @Test func aStoreUnderAWithdrawnReferenceIsRefused() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let subject = "c3ViamVjdC1maXZl"
        func store(_ ref: String) async -> (status: Int, ref: String?, code: String?) {
            let answer = await h.send(
                "POST", "/v1/internal/tenants/acme/pii", bearer: Harness.internalToken, headers: Self.caller,
                json: #"{"subject":"\#(subject)","kind":"email","value":"dana@example.org","ref":"\#(ref)"}"#)
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
            return (answer.status, object?["ref"] as? String, object?["code"] as? String)
        }
        func delete(_ ref: String) async -> Int {
            await h.send("DELETE", "/v1/internal/tenants/acme/pii/\(ref)", bearer: Harness.internalToken, headers: Self.caller).status
        }
        let own = InternalCalls.newVaultReference()
        let first = await store(own)
        #expect(first.status == 201 && first.ref == own)
        #expect(await Self.read(h, own).status == 200)
        #expect(await store(own).code == "pii_ref_unavailable")
        #expect(await store("pii_" + String(repeating: "A", count: 32)).code == "invalid_field")

        // Withdrawn before the store arrives: by the internal DELETE, or by a removed method's event.
        let early = InternalCalls.newVaultReference()
        #expect(await delete(early) == 204)
        let late = await store(early)
        #expect(late.status == 409 && late.code == "pii_ref_unavailable")
        #expect(await Self.read(h, early).status == 404)
        let byEvent = InternalCalls.newVaultReference()
        try await h.consume(
            MethodChanged(
                tenantId: "acme", subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "dana"),
                methodId: "m_" + String(repeating: "c", count: 32), type: "email_otp", status: "DELETED", piiRef: byEvent, sealedSecret: nil,
                lastTotpStep: nil, changedAt: Date()), source: .registration)
        #expect(await store(byEvent).code == "pii_ref_unavailable")
        // Or by another service's withdrawal request (its outbox), before or after the store.
        let requested = InternalCalls.newVaultReference()
        try await h.consume(VaultWithdrawalRequested(tenantId: "acme", piiRef: requested, requestedAt: Date()), source: .registration)
        #expect(await store(requested).code == "pii_ref_unavailable")
        let storedThenRequested = InternalCalls.newVaultReference()
        #expect(await store(storedThenRequested).status == 201)
        // Another tenant's request names no value of this one.
        try await h.consume(VaultWithdrawalRequested(tenantId: "other", piiRef: storedThenRequested, requestedAt: Date()), source: .oob)
        #expect(await Self.read(h, storedThenRequested).status == 200)
        try await h.consume(VaultWithdrawalRequested(tenantId: "acme", piiRef: storedThenRequested, requestedAt: Date()), source: .oob)
        #expect(await Self.read(h, storedThenRequested).status == 404)
        #expect(await store(storedThenRequested).code == "pii_ref_unavailable")

        // Withdrawn while the store is in flight: the store waits on the reference's lock, held
        // here by the withdrawal's transaction, then finds it withdrawn.
        let racing = InternalCalls.newVaultReference()
        var inFlight: Task<(status: Int, ref: String?, code: String?), Never>?
        try await h.context.pool.withTransaction { conn in
            try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\("pii-ref/" + racing), 0))")
            inFlight = Task { await store(racing) }
            var waiting = 0
            for _ in 0..<250 where waiting == 0 {
                try await Task.sleep(for: .milliseconds(20))
                waiting = try await h.context.pool.withConnection { c in
                    try await c.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").first?.int("n") ?? 0
                }
            }
            #expect(waiting == 1)
            try await PIIVault.withdraw(racing, tenant: "acme", on: conn)
        }
        let raced = await inFlight?.value
        #expect(raced?.status == 409 && raced?.code == "pii_ref_unavailable")
        #expect(await Self.read(h, racing).status == 404)

        // A day later the withdrawn references are forgotten (the retention pass).
        try await h.context.pool.withConnection { try await $0.query("UPDATE pii_withdrawn SET withdrawn_at = now() - interval '25 hours' WHERE ref = \(early)") }
        #expect(try await h.context.pool.withConnection { try await PIIVault.purgeWithdrawn(now: Date(), on: $0) } == 1)
        #expect(await store(early).status == 201)
        #expect(await store(byEvent).status == 409)
    }
}
