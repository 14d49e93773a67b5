import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema

/// A transaction to confirm, from this service's read model of the transaction service's events.
struct PendingTransaction: Sendable {
    let id: String
    /// Who must confirm it, by subject reference (the event carries no username).
    let subjectRef: String
    let details: TransactionDetails
    let detailsHash: [UInt8]
    let status: String
    let expiresAt: Date

    /// The transaction, PENDING and unexpired.
    ///
    /// - Throws: 404 `transaction_not_found`; 409 `transaction_not_pending` (confirmed,
    ///   rejected, cancelled or expired).
    static func load(_ id: String, tenant: String, pool: PostgresPool, now: Date = Date()) async throws -> PendingTransaction {
        let notFound = HTTPError(.transactionNotFound, detail: "No such transaction.")
        guard TransactionID.isValid(id) else { throw notFound }
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT subject_ref, details, details_hash, status, expires_at FROM transactions WHERE tenant_id = \(tenant) AND id = \(id)")
        }.first
        guard let row, let subjectRef = row.string("subject_ref"), let text = row.string("details"), let hash = row.bytes("details_hash"),
            let status = row.string("status"), let expires = row.date("expires_at")
        else { throw notFound }
        // Written by TransactionReadModel: details that do not read back are an error (a 500),
        // never a transaction shown without them.
        let details = try JSONValueDecoder().decode(TransactionDetails.self, from: Array(text.utf8))
        guard status == "PENDING", expires > now else {
            throw HTTPError(
                .transactionNotPending,
                detail: "The transaction is \(status == "PENDING" ? "EXPIRED" : status).")
        }
        return PendingTransaction(id: id, subjectRef: subjectRef, details: details, detailsHash: hash, status: status, expiresAt: expires)
    }

    /// Where the transaction stands for the app that confirms it, in this service's read model:
    /// its status (a PENDING one past its expiry reads EXPIRED), never a tcToken (the
    /// transaction service hands that over, ``TransactionTokens``). `nil` when this service does
    /// not know it.
    static func standing(_ id: String, tenant: String, pool: PostgresPool, now: Date = Date()) async throws -> SignInTransaction? {
        guard TransactionID.isValid(id) else { return nil }
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT status, expires_at FROM transactions WHERE tenant_id = \(tenant) AND id = \(id)")
        }.first
        guard let row, var status = row.string("status"), let expires = row.date("expires_at") else { return nil }
        if status == "PENDING", expires <= now { status = "EXPIRED" }
        return SignInTransaction(transactionId: id, status: status)
    }

    /// The fact paths ``contextFacts`` gives rules, which only a sign-in for a transaction has.
    static let contextFactPaths: Set<String> = [
        "context.transactionId", "context.transactionAmount", "context.payee", "context.transactionType",
    ]

    /// Facts for rules, from the transaction itself (not from what the client says).
    var contextFacts: [String: AnyJSON] {
        var facts: [String: AnyJSON] = [
            "transactionId": .string(id), "transactionAmount": .double(Double(details.amount) ?? 0), "currency": .string(details.currency),
            "payee": .string(details.payee),
        ]
        if let type = details.type { facts["transactionType"] = .string(type) }
        return facts
    }
}
