import Crypto
import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import TransactionService

/// The transaction service in process, over a scratch database: a transaction created by the RP
/// is published from the outbox; consumed events (tenants, credentials, decisions) are fed to
/// its handlers directly.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct TransactionLifecycleTests {
    static let key = "sk_harness_0123456789abcdefghijklmnopqrstuv"

    @Test func createdTransactionsArePublishedAndOnlyTheRPReadsThem() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("shop", apiKey: Self.key)
        let body = #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME","type":"payment"}"#
        let created = await h.send("POST", "/v1/tenants/shop/transactions", bearer: Self.key, json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let object = try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any]
        let id = try #require(object?["transactionId"] as? String)
        #expect(try await h.published().map(\.type) == [TransactionChanged.eventType])
        #expect(await h.send("GET", "/v1/tenants/shop/transactions/\(id)", bearer: Self.key).status == 200)
        #expect(await h.send("GET", "/v1/tenants/shop/transactions/\(id)").status == 401)
        // Another tenant's key does not open it.
        try await h.seedTenant("other", apiKey: Self.key + "x")
        #expect(await h.send("GET", "/v1/tenants/shop/transactions/\(id)", bearer: Self.key + "x").status == 401)
    }

    /// The tenant `shop` and a payment of alice's created by its RP: the transaction's id and details hash.
    static func payment(_ h: ServiceHarness<TransactionService>) async throws -> (id: String, detailsHash: String) {
        try await h.seedTenant("shop", apiKey: key)
        let body = #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME"}"#
        let created = await h.send("POST", "/v1/tenants/shop/transactions", bearer: key, json: body)
        let object = try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any]
        return (try #require(object?["transactionId"] as? String), try #require(object?["detailsHash"] as? String))
    }

    /// The transaction's status as its RP reads it.
    static func status(_ h: ServiceHarness<TransactionService>, _ id: String) async throws -> String? {
        let read = await h.send("GET", "/v1/tenants/shop/transactions/\(id)", bearer: key)
        return (try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])?["status"] as? String
    }

    @Test func aDecisionForAnUnknownCredentialConfirmsNothing() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        let (id, hash) = try await Self.payment(h)
        let evidence = SignedAssertionEvidence(
            credentialId: "AAAA", authenticatorData: "AAAA", clientDataJSON: "AAAA", signature: "AAAA", publicKeyCose: "AAAA",
            nonce: "AAAAAAAAAAAAAAAAAAAAAA")
        try await h.consume(
            TransactionDecision(
                tenantId: "shop", transactionId: id, decision: "confirmed", detailsHash: hash, signinId: "si_1", amr: ["fido2"],
                assertions: [evidence], decidedAt: Date()),
            source: .authentication)
        #expect(try await Self.status(h, id) == "PENDING")
        #expect(try await h.published().map(\.type) == [TransactionChanged.eventType])
    }

    /// A rejection counts only from a sign-in that verified a step (its amr) and for the
    /// transaction's current details. Before, a rejected decision without a step, or for other
    /// details, made the transaction REJECTED.
    @Test func aRejectionNeedsAVerifiedStepAndTheCurrentDetails() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        let (id, hash) = try await Self.payment(h)
        func decide(_ decision: String, amr: [String], detailsHash: String) async throws -> String? {
            try await h.consume(
                TransactionDecision(
                    tenantId: "shop", transactionId: id, decision: decision, detailsHash: detailsHash, signinId: "si_1", amr: amr,
                    assertions: [], decidedAt: Date()),
                source: .authentication)
            return try await Self.status(h, id)
        }
        #expect(try await decide("rejected", amr: [], detailsHash: hash) == "PENDING")
        #expect(try await decide("rejected", amr: ["fido2"], detailsHash: Base64URL.encode([UInt8](repeating: 7, count: 32))) == "PENDING")
        #expect(try await h.published().map(\.type) == [TransactionChanged.eventType])
        #expect(try await decide("rejected", amr: ["fido2"], detailsHash: hash) == "REJECTED")
        #expect(try await h.published().map(\.type) == [TransactionChanged.eventType, TransactionChanged.eventType])
    }

    @Test func aTransactionPastItsExpiryReadsExpiredAtOnceAndCannotBeCancelled() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("shop", apiKey: Self.key)
        let body = #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME","expiresInSeconds":60}"#
        let created = await h.send("POST", "/v1/tenants/shop/transactions", bearer: Self.key, json: body)
        let id = try #require((try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["transactionId"] as? String)
        func status() async throws -> String? {
            let read = await h.send("GET", "/v1/tenants/shop/transactions/\(id)", bearer: Self.key)
            return (try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])?["status"] as? String
        }
        #expect(try await status() == "PENDING")
        // Its expiry passes; the expirer (not run by the harness) has not stored anything yet.
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE transactions SET expires_at = now() - interval '1 second' WHERE id = \(id)")
        }
        #expect(try await status() == "EXPIRED")
        let cancel = await h.send("POST", "/v1/tenants/shop/transactions/\(id)/cancel", bearer: Self.key)
        #expect(cancel.status == 409)
        #expect(String(decoding: cancel.body, as: UTF8.self).contains("transaction_not_pending"))
        let amend = await h.send("PATCH", "/v1/tenants/shop/transactions/\(id)", bearer: Self.key, json: #"{"amount":"11.00"}"#)
        #expect(amend.status == 409)
        // The stored row is still PENDING until the expirer's pass, which then publishes it.
        let stored = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT status FROM transactions WHERE id = \(id)").first?.string("status")
        }
        #expect(stored == "PENDING")
        try await TransactionExpirer(context: h.context).expire(now: Date())
        #expect(try await status() == "EXPIRED")
        #expect(try await h.published().map(\.type) == [TransactionChanged.eventType, TransactionChanged.eventType])
    }

    /// The tcToken stays out of Kafka: the authentication service fetches it over an internal
    /// call (internal token and calling service), with the status as the RP reads it.
    @Test func theTCTokenIsHandedOverByAnInternalCallOnly() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("shop", apiKey: Self.key)
        let body = #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME"}"#
        let created = await h.send("POST", "/v1/tenants/shop/transactions", bearer: Self.key, json: body)
        let id = try #require((try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["transactionId"] as? String)
        let path = "/v1/internal/tenants/shop/transactions/\(id)/tctoken"
        let caller = [(name: "X-Signet-Service", value: "authentication")]
        func standing() async throws -> SignInTransaction {
            let r = await h.send("GET", path, bearer: ServiceHarness<TransactionService>.internalToken, headers: caller)
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
            return try HTTPRequest(method: "GET", path: "/", headers: [("Content-Type", "application/json")], body: r.body).decode(SignInTransaction.self)
        }
        #expect(try await standing() == SignInTransaction(transactionId: id, status: "PENDING"))
        // Confirmed (as a decision stores it): the token comes with the status.
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE transactions SET status = 'CONFIRMED', tc_token = 'a.b.c' WHERE id = \(id)")
        }
        #expect(try await standing() == SignInTransaction(transactionId: id, status: "CONFIRMED", tcToken: "a.b.c"))
        // Nobody else: not the RP's key, not the internal token without a calling service.
        #expect(await h.send("GET", path, bearer: Self.key, headers: caller).status == 401)
        #expect(await h.send("GET", path, bearer: ServiceHarness<TransactionService>.internalToken).status == 401)
        #expect(await h.send("GET", "/v1/internal/tenants/shop/transactions/tx_00000000000000000000000000000000/tctoken",
            bearer: ServiceHarness<TransactionService>.internalToken, headers: caller).status == 404)
        // Its event never carries it, confirmed or not.
        let stored = try await h.context.pool.withConnection { try await StoredTransaction.load(id, tenant: "shop", on: $0, forUpdate: false) }
        let changed = stored.changedEvent(h.context.configuration.subjectKey)
        #expect(stored.tcToken == "a.b.c" && changed.status == "CONFIRMED")
        let event = String(decoding: try EventCoding.encode(changed), as: UTF8.self)
        #expect(!event.contains("tcToken") && !event.contains("a.b.c"), "\(event)")
        // Nor the username: the user is named by subject reference (#18); the authentication
        // service asks whose the transaction is over an internal call.
        #expect(changed.subjectRef == h.context.configuration.subjectKey.ref(tenant: "shop", username: stored.username) && !event.contains(stored.username))
        let owner = await h.send("GET", "/v1/internal/tenants/shop/transactions/\(id)/username", bearer: ServiceHarness<TransactionService>.internalToken, headers: caller)
        #expect(owner.status == 200 && (try? JSONValueDecoder().decode(TransactionUsername.self, from: owner.body)) == TransactionUsername(transactionId: id, username: stored.username))
        #expect(await h.send("GET", "/v1/internal/tenants/shop/transactions/\(id)/username", bearer: Self.key, headers: caller).status == 401)
        #expect(await h.send("GET", "/v1/internal/tenants/shop/transactions/tx_00000000000000000000000000000000/username",
            bearer: ServiceHarness<TransactionService>.internalToken, headers: caller).status == 404)
    }
}
