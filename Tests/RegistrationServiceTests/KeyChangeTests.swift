import Crypto
import Foundation
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// `SIGNET_METHOD_SECRET_KEY` changed: a replica given the new key with the old one in
/// `SIGNET_METHOD_SECRET_KEY_ACCEPTED` seals the TOTP secrets again under the new key (with
/// the binding the enrolment seals and opens them with), a removed method's emptied secret
/// stays empty, and without accepted keys no resealer runs.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KeyChangeTests {
    typealias Harness = ServiceHarness<RegistrationService>
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)

    @Test func totpSecretsAreSealedAgainUnderTheNewKey() async throws {
        let h = try await Harness.withDatabase(environment: ["SIGNET_METHOD_SECRET_KEY": Base64URL.encode(Self.old)])
        defer { Task { await h.close() } }
        #expect(h.keyResealer == nil)
        let methods = MethodStore(context: h.context)
        let oldKeys = try SealingKeys(key: Self.old)
        var secrets: [String: [UInt8]] = [:]
        for _ in 0..<3 {
            let id = "m_" + Hex.encode(SecureRandom.bytes(16)), secret = SecureRandom.bytes(20)
            secrets[id] = secret
            let sealed = try oldKeys.seal(secret, associatedData: MethodEnrollment.secretBinding(tenant: "acme", method: id))
            try await methods.insert(.init(id: id, tenant: "acme", username: "alice", type: "totp", sealedSecret: sealed, createdAt: Date()), delivery: nil)
        }
        let ids = secrets.keys.sorted()
        let removed = ids[0], active = ids[1], pending = ids[2]
        try await methods.remove(id: removed, tenant: "acme", username: "alice", at: Date())
        // One confirmed (the authentication service keeps its secret, from its event), one not.
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE user_methods SET status = 'ACTIVE', confirmed_at = \(Date()) WHERE id = \(active)")
        }
        let before = try await h.published().count

        let changed = try await h.replica(environment: [
            "SIGNET_METHOD_SECRET_KEY": Base64URL.encode(Self.new), "SIGNET_METHOD_SECRET_KEY_ACCEPTED": Base64URL.encode(Self.old),
        ])
        let resealer = try #require(changed.keyResealer)
        #expect(try await resealer.pass()["user_methods.sealed_secret"] == KeyResealer.Outcome(scanned: 2, resealed: 2))
        let onlyNew = try SealingKeys(key: Self.new)
        let rows = try await h.context.pool.withConnection { try await $0.query("SELECT id, sealed_secret FROM user_methods") }
        #expect(rows.count == 3)
        for row in rows {
            let id = try #require(row.string("id"))
            if id == removed {
                #expect(row.bytes("sealed_secret") == nil)
                continue
            }
            let sealed = try #require(row.bytes("sealed_secret"))
            #expect(try onlyNew.open(sealed, associatedData: MethodEnrollment.secretBinding(tenant: "acme", method: id)) == secrets[id])
        }
        // The active method's new sealing is published with it (the pending one's is not: no
        // other service holds it yet), so that copies built from the events follow the key.
        let events = try await h.published().dropFirst(before).filter { $0.type == MethodChanged.eventType }
            .map { try EventCoding.decode(MethodChanged.self, from: Array($0.data.utf8)) }
        #expect(events.map(\.methodId) == [active])
        let event = try #require(events.first)
        #expect(event.status == "ACTIVE" && event.type == "totp" && event.lastTotpStep == nil && event.piiRef == nil)
        #expect(event.subjectRef == h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"))
        let published = try #require(event.sealedSecret.flatMap(Base64URL.decode))
        #expect(try onlyNew.open(published, associatedData: MethodEnrollment.secretBinding(tenant: "acme", method: active)) == secrets[active])
        #expect(throws: (any Error).self) { try oldKeys.open(published, associatedData: MethodEnrollment.secretBinding(tenant: "acme", method: active)) }
        #expect(secrets[pending] != nil)
        // A second pass finds nothing under the old key, and publishes nothing.
        #expect(try await resealer.pass()["user_methods.sealed_secret"] == KeyResealer.Outcome(scanned: 2))
        #expect(try await h.published().filter { $0.type == MethodChanged.eventType }.count == events.count + 1)
    }
}
