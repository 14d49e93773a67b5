import Foundation
import HTTPServer
import Postgres
import Schema

/// A transaction to confirm, from this service's read model of the transaction service's events.
struct PendingTransaction: Sendable {
    let id: String
    let username: String
    let details: TransactionDetails
    let detailsHash: [UInt8]
    let status: String
    let expiresAt: Date

    /// The transaction, PENDING and unexpired.
    ///
    /// - Throws: 404 `transaction_not_found`; 409 `transaction_not_pending` (confirmed,
    ///   rejected, cancelled or expired).
    static func load(_ id: String, tenant: String, pool: PostgresPool, now: Date = Date()) async throws -> PendingTransaction {
        let notFound = HTTPError(ProblemCode("transaction_not_found", status: 404, title: "Transaction not found"), detail: "No such transaction.")
        guard TransactionID.isValid(id) else { throw notFound }
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT username, details, details_hash, status, expires_at FROM transactions WHERE tenant_id = \(tenant) AND id = \(id)")
        }.first
        guard let row, let username = row.string("username"), let text = row.string("details"),
            let details = try? JSONDecoder().decode(TransactionDetails.self, from: Data(text.utf8)), let hash = row.bytes("details_hash"),
            let status = row.string("status"), let expires = row.date("expires_at")
        else { throw notFound }
        guard status == "PENDING", expires > now else {
            throw HTTPError(
                ProblemCode("transaction_not_pending", status: 409, title: "Transaction not pending"),
                detail: "The transaction is \(status == "PENDING" ? "EXPIRED" : status).")
        }
        return PendingTransaction(id: id, username: username, details: details, detailsHash: hash, status: status, expiresAt: expires)
    }

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
