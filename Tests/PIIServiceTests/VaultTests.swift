import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import PIIService

/// The vault in process, over a scratch database: values stored encrypted, every read audited,
/// and only other services (by the internal token and their name) reach it.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct VaultTests {
    @Test func storedValuesAreEncryptedAndEveryReadIsAudited() async throws {
        let h = try await ServiceHarness<PIIService>.withDatabase()
        defer { Task { await h.close() } }
        let token = ServiceHarness<PIIService>.internalToken
        let caller = [(name: "X-Signet-Service", value: "oob")]
        let email = "vault.test.\(UInt32.random(in: 0...UInt32.max))@example.org"
        let stored = await h.send(
            "POST", "/v1/internal/tenants/acme/pii", bearer: token, headers: caller, json: #"{"subject":"s1","kind":"email","value":"\#(email)"}"#)
        #expect(stored.status == 201, "\(String(decoding: stored.body, as: UTF8.self))")
        let ref = try #require((try JSONSerialization.jsonObject(with: Data(stored.body)) as? [String: Any])?["ref"] as? String)
        // Not in plaintext in any column.
        let leaked = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT count(*) AS n FROM pii_values WHERE strpos(encode(ciphertext, 'escape'), \(email)) > 0 OR strpos(masked, \(email)) > 0")
        }.first?.int("n")
        #expect(leaked == 0)
        let read = await h.send("POST", "/v1/internal/tenants/acme/pii/\(ref)/read", bearer: token, headers: caller, json: #"{"purpose":"otp_delivery"}"#)
        #expect(read.status == 200 && String(decoding: read.body, as: UTF8.self).contains(email))
        let audited = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT reader, purpose FROM pii_reads WHERE tenant_id = 'acme' AND ref = \(ref)")
        }
        #expect(audited.count == 1 && audited.first?.string("reader") == "oob" && audited.first?.string("purpose") == "otp_delivery")
        // Without the calling service's name, or with another token: refused, and not audited.
        #expect(await h.send("POST", "/v1/internal/tenants/acme/pii/\(ref)/read", bearer: token, json: #"{"purpose":"x"}"#).status == 401)
        #expect(await h.send("POST", "/v1/internal/tenants/acme/pii/\(ref)/read", bearer: "dev-internal-token", headers: caller, json: #"{"purpose":"x"}"#).status == 401)
    }
}
