import FIDO
import HTTPServer

// The problem codes of a refused transaction image (`FIDO.UAFTransactionPNG`), shared by the
// services that check one: the transaction service when a transaction is created with
// `images`, the authentication service for an inline `image/png` transaction content. Declared
// once here so that both answer with the same code, status and title; each service's OpenAPI
// document lists them in its ProblemCode enum (`ProblemCodeTests` counts this file for every
// service that imports FIDOProblems).
extension ProblemCode {
    // MARK: - Transaction images (`image/png`, FIDO.UAFTransactionPNG)

    /// Not a PNG file the specification allows (signature, chunks, CRCs, header, order, image data).
    public static let transactionPNGMalformed = ProblemCode("uaf_transaction_png_malformed", status: 400, title: "Invalid transaction image")
    /// A PNG chunk other than IHDR, PLTE, tRNS, IDAT, IEND, sRGB, gAMA and pHYs (text, profiles,
    /// animation), or a gamma or pixel aspect a transaction image may not carry.
    public static let transactionPNGUnsupportedChunk = ProblemCode(
        "uaf_transaction_png_unsupported_chunk", status: 400, title: "Invalid transaction image")
    /// The PNG file, a dimension or its image data is past the bounds.
    public static let transactionPNGTooLarge = ProblemCode("uaf_transaction_png_too_large", status: 400, title: "Invalid transaction image")
    /// The PNG is not what its tcDisplayPNGCharacteristics announce.
    public static let transactionPNGCharacteristicsMismatch = ProblemCode(
        "uaf_transaction_png_characteristics_mismatch", status: 400, title: "Invalid transaction image")

    /// The problem for a PNG that `FIDO.UAFTransactionPNG` refused.
    public static func transactionPNGRefused(_ error: UAFTransactionPNGError) -> ProblemCode {
        switch error.code {
        case .unsupportedChunk: transactionPNGUnsupportedChunk
        case .tooLarge: transactionPNGTooLarge
        case .characteristicsMismatch: transactionPNGCharacteristicsMismatch
        default: transactionPNGMalformed
        }
    }
}
