import Crypto
import Foundation
import Postgres
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
        let removed = try #require(secrets.keys.sorted().first)
        try await methods.remove(id: removed, tenant: "acme", username: "alice", at: Date())

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
    }
}
