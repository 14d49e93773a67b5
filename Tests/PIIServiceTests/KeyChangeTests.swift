import Crypto
import Foundation
import HTTPServer
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import PIIService

/// `SIGNET_PII_KEK` changed: a replica given the new key with the old one in
/// `SIGNET_PII_KEK_ACCEPTED` reads what the old key wrapped and wraps every subject's data key
/// again under the new one; a replica that knows only the new key then reads it all. An erased
/// subject's key stays erased.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KeyChangeTests {
    static let old = Base64URL.encode([UInt8](repeating: 1, count: 32))
    static let new = Base64URL.encode([UInt8](repeating: 2, count: 32))
    static let token = ServiceHarness<PIIService>.internalToken
    static let caller = [(name: "X-Signet-Service", value: "oob")]

    static func store(_ h: ServiceHarness<PIIService>, subject: String, value: String) async throws -> String {
        let stored = await h.send(
            "POST", "/v1/internal/tenants/acme/pii", bearer: token, headers: caller, json: #"{"subject":"\#(subject)","kind":"email","value":"\#(value)"}"#)
        try #require(stored.status == 201, "\(String(decoding: stored.body, as: UTF8.self))")
        return try #require((try JSONSerialization.jsonObject(with: Data(stored.body)) as? [String: Any])?["ref"] as? String)
    }

    static func read(_ h: ServiceHarness<PIIService>, _ ref: String) async -> (status: Int, text: String) {
        let r = await h.send("POST", "/v1/internal/tenants/acme/pii/\(ref)/read", bearer: token, headers: caller, json: #"{"purpose":"otp_delivery"}"#)
        return (r.status, String(decoding: r.body, as: UTF8.self))
    }

    @Test func dataKeysAreWrappedAgainUnderTheNewKey() async throws {
        let h = try await ServiceHarness<PIIService>.withDatabase(environment: ["SIGNET_PII_KEK": Self.old])
        defer { Task { await h.close() } }
        var refs: [String] = []
        for i in 0..<3 { refs.append(try await Self.store(h, subject: "s\(i)", value: "user\(i)@example.org")) }
        // One subject erased: its key is gone (NULL), and must stay so.
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE subject_keys SET wrapped_key = NULL, erased_at = now() WHERE tenant_id = 'acme' AND subject = 's2'")
        }
        let onlyNew = try await h.replica(environment: ["SIGNET_PII_KEK": Self.new])
        #expect(await Self.read(onlyNew, refs[0]).status == 404, "the new key alone cannot unwrap the old keys")

        let changed = try await h.replica(environment: ["SIGNET_PII_KEK": Self.new, "SIGNET_PII_KEK_ACCEPTED": Self.old])
        #expect(await Self.read(changed, refs[0]).text.contains("user0@example.org"), "read under the accepted key")
        // A subject stored by the changed replica is wrapped under the new key from the start.
        refs.append(try await Self.store(changed, subject: "s3", value: "user3@example.org"))
        let resealer = try #require(changed.keyResealer)
        let outcome = try await resealer.pass()["subject_keys.wrapped_key"]
        #expect(outcome == KeyResealer.Outcome(scanned: 3, resealed: 2))

        for (i, ref) in refs.enumerated() where i != 2 {
            #expect(await Self.read(onlyNew, ref).text.contains("user\(i)@example.org"))
        }
        #expect(await Self.read(onlyNew, refs[2]).status == 404)
        let erased = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT wrapped_key IS NULL AS gone FROM subject_keys WHERE tenant_id = 'acme' AND subject = 's2'")
        }.first?.bool("gone")
        #expect(erased == true)
        // A key listed nowhere any more: the old values are counted as unreadable, and left.
        let other = try await h.replica(environment: ["SIGNET_PII_KEK": Base64URL.encode([UInt8](repeating: 3, count: 32)), "SIGNET_PII_KEK_ACCEPTED": Self.old])
        let otherResealer = try #require(other.keyResealer)
        #expect(try await otherResealer.pass()["subject_keys.wrapped_key"] == KeyResealer.Outcome(scanned: 3, unreadable: 3))
    }
}
