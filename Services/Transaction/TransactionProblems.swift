import FIDO
import HTTPServer

/// The problem codes the transaction service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s). Every code here is listed in
/// `schemas/openapi/transaction.yaml` (checked by `ProblemCodeTests` in SchemaTests), and no
/// other file of the service spells a problem code.
extension ProblemCode {
    /// No such transaction in the tenant.
    static let transactionNotFound = ProblemCode("transaction_not_found", status: 404, title: "Transaction not found")
    /// The transaction is confirmed, rejected, cancelled or expired: it cannot change.
    static let transactionNotPending = ProblemCode("transaction_not_pending", status: 409, title: "Transaction not pending")
    /// The transaction has no confirmation (no evidence yet).
    static let notConfirmed = ProblemCode("not_confirmed", status: 409, title: "Not confirmed")

    // MARK: - Transaction images (`images`, FIDO.UAFTransactionPNG), as the authentication service names them

    /// Not a PNG file the specification allows (signature, chunks, CRCs, header, order, image data).
    static let transactionPNGMalformed = ProblemCode("uaf_transaction_png_malformed", status: 400, title: "Invalid transaction image")
    /// A PNG chunk other than IHDR, PLTE, tRNS, IDAT, IEND, sRGB, gAMA and pHYs (text, profiles,
    /// animation), or a gamma or pixel aspect a transaction image may not carry.
    static let transactionPNGUnsupportedChunk = ProblemCode(
        "uaf_transaction_png_unsupported_chunk", status: 400, title: "Invalid transaction image")
    /// The PNG file, a dimension or its image data is past the bounds.
    static let transactionPNGTooLarge = ProblemCode("uaf_transaction_png_too_large", status: 400, title: "Invalid transaction image")
    /// The PNG is not what its tcDisplayPNGCharacteristics announce.
    static let transactionPNGCharacteristicsMismatch = ProblemCode(
        "uaf_transaction_png_characteristics_mismatch", status: 400, title: "Invalid transaction image")

    /// The problem for a refused PNG.
    static func transactionPNGRefused(_ error: UAFTransactionPNGError) -> ProblemCode {
        switch error.code {
        case .unsupportedChunk: transactionPNGUnsupportedChunk
        case .tooLarge: transactionPNGTooLarge
        case .characteristicsMismatch: transactionPNGCharacteristicsMismatch
        default: transactionPNGMalformed
        }
    }
}
