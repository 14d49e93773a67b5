import HTTPServer

/// The problem codes the transaction service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s) and the refused transaction image's (`FIDOProblems`).
/// Every code here and in `FIDOProblems` is listed in `schemas/openapi/transaction.yaml` (checked by
/// `ProblemCodeTests` in SchemaTests), and no other file of the service spells a problem code.
extension ProblemCode {
    /// No such transaction in the tenant.
    static let transactionNotFound = ProblemCode("transaction_not_found", status: 404, title: "Transaction not found")
    /// The transaction is confirmed, rejected, cancelled or expired: it cannot change.
    static let transactionNotPending = ProblemCode("transaction_not_pending", status: 409, title: "Transaction not pending")
    /// The transaction has no confirmation (no evidence yet).
    static let notConfirmed = ProblemCode("not_confirmed", status: 409, title: "Not confirmed")
}
