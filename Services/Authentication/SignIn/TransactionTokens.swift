import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// The tcToken of a confirmed transaction, for the app that confirmed it: fetched from the
/// transaction service over an internal call (`SIGNET_TRANSACTION_URL`) when the app asks,
/// so that a bearer token never travels in Kafka (`TransactionChanged` does not carry it).
struct TransactionTokens: Sendable {
    let calls: InternalCalls
    /// The transaction service (`SIGNET_TRANSACTION_URL`).
    let transactionURL: String

    /// Where the transaction stands at the transaction service, with its tcToken once
    /// CONFIRMED. Call it only for a sign-in that confirmed the transaction and succeeded.
    ///
    /// - Throws: 503 `service_unavailable` when the transaction service cannot answer (the app
    ///   asks again); its refusal otherwise.
    func standing(_ transactionID: String, tenant: String) async throws -> SignInTransaction {
        guard TransactionID.isValid(transactionID) else { throw HTTPError(.transactionNotFound) }
        let answer = try await calls.get(
            "\(transactionURL)/v1/internal/tenants/\(tenant)/transactions/\(transactionID)/tctoken", as: SignInTransaction.self)
        guard answer.transactionId == transactionID else { throw HTTPError(.unavailable, detail: "The transaction service answered for another transaction.") }
        return answer
    }

    /// Who must confirm the transaction, from the transaction service: `TransactionChanged`
    /// names the user by subject reference only, so a confirmation that starts without a
    /// username asks (the caller checks the answer against the reference it holds).
    ///
    /// - Throws: 503 `service_unavailable` when the transaction service cannot answer; its
    ///   refusal (404 `transaction_not_found`) otherwise.
    func username(_ transactionID: String, tenant: String) async throws -> String {
        guard TransactionID.isValid(transactionID) else { throw HTTPError(.transactionNotFound) }
        let answer = try await calls.get(
            "\(transactionURL)/v1/internal/tenants/\(tenant)/transactions/\(transactionID)/username", as: TransactionUsername.self)
        guard answer.transactionId == transactionID, UsernameRules.isValid(answer.username) else {
            throw HTTPError(.unavailable, detail: "The transaction service answered for another transaction.")
        }
        return answer.username
    }
}
