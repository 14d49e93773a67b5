import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
import Tokens
@testable import TransactionService

/// What the confirmation-step suites (``UAFConfirmationTests``, ``PushConfirmationTests``)
/// share, over a scratch database: the tenant `shop` and a transaction of its, the
/// authentication service's decision event fed to the service (then the transaction read
/// back), and the tcToken's claims verified against the service's JWKS.
enum ConfirmationSteps {
    typealias Harness = ServiceHarness<TransactionService>
    static let key = "sk_harness_0123456789abcdefghijklmnopqrstuv"

    /// The tenant `shop`, whose web origin is the facet of the test authenticators.
    static func seed(_ h: Harness) async throws {
        try await h.seedTenant("shop", apiKey: Self.key, rpId: "shop.example", origins: ["https://shop.example"])
    }

    /// A payment of `username` created through the RP API (201 expected).
    static func create(_ h: Harness, username: String = "alice") async throws -> TransactionResource {
        let body = #"{"username":"\#(username)","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME","type":"payment"}"#
        let created = await h.send("POST", "/v1/tenants/shop/transactions", bearer: Self.key, json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        return try JSONValueDecoder().decode(TransactionResource.self, from: created.body)
    }

    /// The authentication service's `confirmed` decision for `tx` with one step of `amr` and its
    /// `evidence`, then the transaction as the RP reads it.
    static func decide(
        _ h: Harness, _ tx: TransactionResource, _ evidence: SignedAssertionEvidence, amr: String, decidedAt: Date = Date()
    ) async throws -> TransactionResource {
        try await h.consume(
            TransactionDecision(
                tenantId: "shop", transactionId: tx.transactionId, decision: "confirmed", detailsHash: tx.detailsHash, signinId: "si_1",
                amr: [amr], assertions: [evidence], decidedAt: decidedAt),
            source: .authentication)
        let read = await h.send("GET", "/v1/tenants/shop/transactions/\(tx.transactionId)", bearer: Self.key)
        return try JSONValueDecoder().decode(TransactionResource.self, from: read.body)
    }

    /// The claims of `token`, verified with the service's published keys (issuer and audience).
    static func tcTokenClaims(_ h: Harness, _ token: String) async throws -> JWTClaims {
        let jwks = await h.send("GET", "/v1/tenants/shop/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/transaction", audience: "shop"))
        return try verifier.verify(token, now: Date()).claims
    }

    /// The evidence the RP reads back: 200 and the step's `format`.
    static func expectEvidence(_ h: Harness, _ tx: TransactionResource, format: String) async {
        let evidence = await h.send("GET", "/v1/tenants/shop/transactions/\(tx.transactionId)/evidence", bearer: Self.key)
        #expect(evidence.status == 200 && String(decoding: evidence.body, as: UTF8.self).contains(#""format":"\#(format)""#))
    }
}
