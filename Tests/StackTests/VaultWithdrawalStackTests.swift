import Crypto
import Foundation
import Postgres
import Schema
import ServiceKit
import Testing
import TestSupport

/// A withdrawal from the vault requested through a service's outbox reaches the pii service
/// over Kafka (`signet.pii.requests`) and deletes the value, from each service that sends one
/// (the registration service for sign-up profiles, the oob service for identity documents).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(1)))
struct VaultWithdrawalStackTests {
    static let pii = "http://127.0.0.1:8085/v1/internal/tenants/demo/pii"

    static func call(_ method: String, _ url: String, json: String?) async throws -> TestHTTP.Response {
        let token = TestStack.environment["SIGNET_INTERNAL_TOKEN"] ?? "dev-internal-token-registration"
        var headers = ["Authorization": "Bearer \(token)", "X-Signet-Service": "registration"]
        if json != nil { headers["Content-Type"] = "application/json" }
        return try await TestHTTP.send(method, url, headers: headers, body: json.map { Array($0.utf8) })
    }

    static func read(_ ref: String) async throws -> Int {
        try await call("POST", "\(pii)/\(ref)/read", json: #"{"purpose":"stack test"}"#).status
    }

    @Test(arguments: [("signet_registration", ServiceName.registration), ("signet_oob", ServiceName.oob)])
    func aRequestInTheOutboxDeletesTheValue(database: String, source: ServiceName) async throws {
        try TestStack.require()
        let ref = InternalCalls.newVaultReference()
        let subject = Base64URL.encode(SecureRandom.bytes(32))
        let stored = try await Self.call(
            "POST", Self.pii, json: #"{"subject":"\#(subject)","kind":"email","value":"withdrawn@example.org","ref":"\#(ref)"}"#)
        try #require(stored.status == 201, "\(stored.text)")
        #expect(try await Self.read(ref) == 200)

        let pool = TestStack.pool(database: database, size: 1)
        defer { pool.close() }
        try await pool.withTransaction { try await InternalCalls.requestVaultWithdrawal(ref, tenant: "demo", source: source, on: $0) }
        // The relay polls its outbox every 250 ms; the pii service's consumer then deletes it.
        let gone = await TestStack.eventually { (try? await Self.read(ref)) == 404 }
        #expect(gone, "\(source): the value is still readable")
        // And a store under the reference, as one still in flight would arrive, is refused.
        let late = try await Self.call(
            "POST", Self.pii, json: #"{"subject":"\#(subject)","kind":"email","value":"withdrawn@example.org","ref":"\#(ref)"}"#)
        #expect(late.status == 409 && (try? late.json())?["code"] as? String == "pii_ref_unavailable", "\(late.text)")
    }
}
