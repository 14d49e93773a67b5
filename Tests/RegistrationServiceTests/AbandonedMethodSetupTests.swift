import Crypto
import Foundation
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// What becomes of a method setup that never completes, over a scratch database: one not
/// confirmed within a day is removed by the retention pass with the vault's copy of its address
/// or number, and one that fails after the vault stored the value withdraws it at once.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct AbandonedMethodSetupTests {
    typealias Harness = ServiceHarness<RegistrationService>

    static func removals(_ h: Harness) async throws -> [MethodChanged] {
        try await h.published(MethodChanged.self).filter { $0.status == "DELETED" }
    }

    /// `services` started as the vault and the authentication service both, and a harness over
    /// a scratch database calling it, with the tenant and its key.
    static func harness(calling services: HTTPServer) async throws -> (Harness, String) {
        try services.start()
        let url = "http://127.0.0.1:\(services.boundPort)"
        let h = try await Harness.withDatabase(environment: ["SIGNET_PII_URL": url, "SIGNET_AUTHENTICATION_URL": url])
        return (h, try await CredentialManagementTests.tenantWithKey(h))
    }

    static func newID() -> String { "m_" + Hex.encode(SecureRandom.bytes(16)) }

    @Test func aSetupNotConfirmedWithinADayIsRemovedWithItsVaultValue() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)
        let methods = MethodStore(context: h.context)
        let now = Date()
        let (oldEmail, oldTotp, recent, confirmed, bob) = (Self.newID(), Self.newID(), Self.newID(), Self.newID(), Self.newID())
        let ref = "pii_" + Hex.encode(SecureRandom.bytes(16)), bobRef = "pii_" + Hex.encode(SecureRandom.bytes(16))
        try await methods.insert(
            .init(
                id: oldEmail, tenant: "acme", username: "alice", type: "email_otp", piiRef: ref, masked: "a•••@example.com", codeHash: [1, 2, 3],
                codeExpiresAt: now, createdAt: now),
            delivery: nil)
        try await methods.insert(.init(id: oldTotp, tenant: "acme", username: "alice", type: "totp", sealedSecret: [9], createdAt: now), delivery: nil)
        try await methods.insert(.init(id: recent, tenant: "acme", username: "alice", type: "totp", sealedSecret: [8], createdAt: now), delivery: nil)
        try await methods.insert(.init(id: confirmed, tenant: "acme", username: "alice", type: "totp", sealedSecret: [7], createdAt: now), delivery: nil)
        try await methods.insert(
            .init(id: bob, tenant: "acme", username: "bob", type: "sms_otp", piiRef: bobRef, masked: "+44•••23", createdAt: now), delivery: nil)
        // Carol's erasure is in progress: her abandoned setup is left to it.
        let carol = Self.newID()
        try await methods.insert(
            .init(id: carol, tenant: "acme", username: "carol", type: "email_otp", piiRef: "pii_" + Hex.encode(SecureRandom.bytes(16)), createdAt: now),
            delivery: nil)
        let erasure = await h.send("DELETE", "/v1/tenants/acme/users/carol", bearer: key)
        #expect(erasure.status == 202, "\(String(decoding: erasure.body, as: UTF8.self))")
        // Set up a day and a minute ago (and one of them confirmed then); `recent` 23 hours ago.
        let dayAgo = now.addingTimeInterval(-MethodStore.abandonedAfter - 60)
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE user_methods SET created_at = \(dayAgo) WHERE id IN (\(oldEmail), \(oldTotp), \(confirmed), \(bob), \(carol))")
            try await conn.query("UPDATE user_methods SET created_at = \(now.addingTimeInterval(-23 * 3600)) WHERE id = \(recent)")
            try await conn.query("UPDATE user_methods SET status = 'ACTIVE', confirmed_at = \(dayAgo) WHERE id = \(confirmed)")
        }
        #expect(try await Self.removals(h).isEmpty)

        #expect(try await RetentionStore(context: h.context).purge(now: now) == 3)

        let rows = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT id, status, pii_ref, sealed_secret, code_hash, code_expires_at, deleted_at FROM user_methods")
        }
        var status: [String: String] = [:]
        for row in rows {
            let id = try #require(row.string("id"))
            status[id] = row.string("status")
            if row.string("status") == "DELETED" {
                #expect(row.string("pii_ref") == nil && row.bytes("sealed_secret") == nil && row.bytes("code_hash") == nil && row.date("code_expires_at") == nil)
                #expect(row.date("deleted_at") != nil)
            }
        }
        #expect(status == [oldEmail: "DELETED", oldTotp: "DELETED", bob: "DELETED", recent: "PENDING_CONFIRMATION", confirmed: "ACTIVE", carol: "PENDING_CONFIRMATION"])
        // One event each, naming the vault reference (the pii service deletes the value on it)
        // and the user by subject reference only.
        let removed = try await Self.removals(h)
        #expect(removed.count == 3)
        let byID = Dictionary(uniqueKeysWithValues: removed.map { ($0.methodId, $0) })
        #expect(byID[oldEmail]?.piiRef == ref && byID[bob]?.piiRef == bobRef && byID[oldTotp]?.piiRef == nil)
        #expect(byID[oldTotp]?.sealedSecret == nil && byID[oldEmail]?.tenantId == "acme")
        #expect(byID[bob]?.subjectRef == h.context.configuration.subjectKey.ref(tenant: "acme", username: "bob"))
        #expect(byID[oldEmail]?.subjectRef == h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"))

        // Gone for the user: not listed, and a late code finds nothing (404, not "already confirmed").
        let list = await h.send("GET", "/v1/tenants/acme/users/alice/methods", bearer: key)
        let listed = try JSONValueDecoder().decode(MethodList.self, from: list.body).methods.map(\.methodId)
        #expect(Set(listed) == [recent, confirmed])
        let late = await h.send("POST", "/v1/tenants/acme/users/alice/methods/\(oldTotp)/confirm", bearer: key, json: #"{"code":"123456"}"#)
        #expect(late.status == 404 && String(decoding: late.body, as: UTF8.self).contains(#""code":"not_found""#))

        // Nothing more to remove; the removed rows then follow the tenant's retention.
        #expect(try await RetentionStore(context: h.context).purge(now: now) == 0)
        #expect(try await Self.removals(h).count == 3)
    }

    /// Many abandoned setups: removed in batches, each batch with its events.
    @Test func abandonedSetupsAreRemovedInBatches() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        let methods = MethodStore(context: h.context)
        let now = Date()
        for i in 0..<7 {
            try await methods.insert(
                .init(id: Self.newID(), tenant: "acme", username: "user\(i)", type: "totp", sealedSecret: [UInt8(i)], createdAt: now), delivery: nil)
        }
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE user_methods SET created_at = \(now.addingTimeInterval(-MethodStore.abandonedAfter - 1))")
        }
        // Three a batch, two batches a pass: six, then the last one.
        #expect(try await methods.removeAbandoned(now: now, limit: 3, maxBatches: 2) == 6)
        #expect(try await Self.removals(h).count == 6)
        #expect(try await methods.removeAbandoned(now: now, limit: 3, maxBatches: 2) == 1)
        #expect(try await Self.removals(h).count == 7)
        #expect(try await methods.removeAbandoned(now: now, limit: 3, maxBatches: 2) == 0)
    }

    /// The vault stored the address, then recording the method failed (a database fault,
    /// injected as a trigger): the value is withdrawn with a removal event and no code is sent.
    /// One stand-in serves the two services the setup calls: the pii vault, and the
    /// authentication service's registration decision (IGNORE: the choice is open).
    @Test func aSetupThatFailsAfterTheVaultStoredTheValueWithdrawsIt() async throws {
        let ref = "pii_" + Hex.encode(SecureRandom.bytes(16))
        let stored = PlainLock(0)
        let services = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            let json: String
            switch (request.method, request.path) {
            case ("POST", "/v1/internal/tenants/acme/pii"):
                stored.withLock { $0 += 1 }
                json = #"{"ref":"\#(ref)","masked":"a•••@example.com"}"#
            case ("POST", "/v1/internal/tenants/acme/registration-decision"):
                json = #"{"action":"IGNORE_REGISTRATION","methods":[],"matchedRule":"default"}"#
            default:
                return HTTPResponse(status: 404)
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
        }
        let (h, key) = try await Self.harness(calling: services)
        defer { Task { await h.close(); await services.shutdown() } }
        try await h.context.pool.withConnection { conn in
            try await conn.query(
                """
                CREATE FUNCTION refuse_methods() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$;
                """)
            try await conn.query("CREATE TRIGGER refuse_methods BEFORE INSERT ON user_methods FOR EACH ROW EXECUTE FUNCTION refuse_methods()")
        }
        let failed = await h.send("POST", "/v1/tenants/acme/users/alice/methods", bearer: key, json: #"{"type":"email_otp","email":"alice@example.com"}"#)
        #expect(failed.status == 500, "\(String(decoding: failed.body, as: UTF8.self))")
        #expect(stored.withLock { $0 } == 1)
        let removed = try await Self.removals(h)
        #expect(removed.count == 1 && removed.first?.piiRef == ref && removed.first?.type == "email_otp")
        #expect(removed.first?.subjectRef == h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"))
        #expect(try await h.published().contains { $0.type == DeliveryRequested.eventType } == false)
        // Without the fault the same setup is recorded, its code sent, nothing withdrawn.
        try await h.context.pool.withConnection { conn in try await conn.query("DROP TRIGGER refuse_methods ON user_methods") }
        let created = await h.send("POST", "/v1/tenants/acme/users/alice/methods", bearer: key, json: #"{"type":"email_otp","email":"alice@example.com"}"#)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        #expect(try await Self.removals(h).count == 1)
        #expect(try await h.published().contains { $0.type == DeliveryRequested.eventType })
    }

    /// The vault's answer never arrives intact (it stored the value, then failed: a 500 here,
    /// as a timeout or a lost connection would be): the setup fails, and the value is withdrawn
    /// under the reference the setup sent with it. A refusal (a 4xx: nothing stored) withdraws
    /// nothing.
    @Test func aStoreWhoseAnswerIsLostIsWithdrawnByTheReferenceSentWithIt() async throws {
        let sent = PlainLock([String]())
        let answer = PlainLock(500)
        let services = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            switch (request.method, request.path) {
            case ("POST", "/v1/internal/tenants/acme/pii"):
                let body = try? JSONValueDecoder().decode(PIIStoreRequest.self, from: request.body)
                sent.withLock { $0.append(body?.ref ?? "none") }
                let status = answer.withLock { $0 }
                let json = #"{"type":"about:blank","title":"x","status":\#(status),"code":"\#(status == 409 ? "pii_subject_erased" : "internal_error")"}"#
                return HTTPResponse(status: status, headers: [("Content-Type", "application/problem+json")], body: Array(json.utf8))
            case ("POST", "/v1/internal/tenants/acme/registration-decision"):
                let json = #"{"action":"IGNORE_REGISTRATION","methods":[],"matchedRule":"default"}"#
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
            default:
                return HTTPResponse(status: 404)
            }
        }
        let (h, key) = try await Self.harness(calling: services)
        defer { Task { await h.close(); await services.shutdown() } }

        let failed = await h.send("POST", "/v1/tenants/acme/users/alice/methods", bearer: key, json: #"{"type":"sms_otp","phone":"+15555550123"}"#)
        #expect(failed.status == 503, "\(String(decoding: failed.body, as: UTF8.self))")
        let refs = sent.withLock { $0 }
        #expect(refs.count == 1 && refs.allSatisfy(PIIReferenceText.isWellFormed), "\(refs)")
        let removed = try await Self.removals(h)
        #expect(removed.count == 1 && removed.first?.piiRef == refs.first && removed.first?.type == "sms_otp", "\(removed)")
        #expect(try await h.published().contains { $0.type == DeliveryRequested.eventType } == false)
        #expect(try await h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM user_methods").first?.int("n") } == 0)

        // Refused: nothing was stored, nothing is withdrawn; each store sends a reference of its own.
        answer.withLock { $0 = 409 }
        let refused = await h.send("POST", "/v1/tenants/acme/users/alice/methods", bearer: key, json: #"{"type":"sms_otp","phone":"+15555550123"}"#)
        #expect(refused.status == 409, "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(try await Self.removals(h).count == 1)
        #expect(Set(sent.withLock { $0 }).count == 2)
    }

    /// A withdrawal after a method's recording failed leaves the value when the method was
    /// recorded after all (a COMMIT whose outcome was unknown): the row refers to it.
    @Test func aMethodRecordedAfterAllKeepsItsValue() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        let methods = MethodStore(context: h.context)
        let (recorded, missing) = (Self.newID(), Self.newID())
        let (recordedRef, missingRef) = (InternalCalls.newVaultReference(), InternalCalls.newVaultReference())
        try await methods.insert(
            .init(id: recorded, tenant: "acme", username: "alice", type: "email_otp", piiRef: recordedRef, masked: "a•••@example.com", createdAt: Date()),
            delivery: nil)
        await methods.withdraw(piiRef: recordedRef, methodID: recorded, type: "email_otp", tenant: "acme", username: "alice", at: Date())
        await methods.withdraw(piiRef: missingRef, methodID: missing, type: "email_otp", tenant: "acme", username: "alice", at: Date())
        #expect(try await Self.removals(h).map(\.piiRef) == [missingRef])
    }
}
