import Crypto
import FIDO
import FIDOProblems
import HTTPServer
import JSON
import Schema

/// The transaction a UAF AuthenticationRequest asks the user to confirm (UAF Protocol §3.5.2),
/// checked before it is sent: `transactionText`, or a `transaction` list of `text/plain` and
/// `image/png` forms of one transaction (the client shows the form its authenticator can).
///
/// What is sent goes into the request's `transaction`; what verification needs of it, the
/// hashes of each form (``FIDO/UAFShownTransaction``), is sealed into `serverData`, so the
/// content the assertion's TransactionContentHash must match is the server's, not the response's.
struct UAFTransactionContents: Sendable {
    /// The Transaction entries for the request.
    let transactions: [UAFTransaction]
    /// What verification compares TransactionContentHash with.
    let shown: [UAFShownTransaction]

    /// Longest text shown to the user.
    static let maximumText = 200
    /// Most forms of one transaction in a request.
    static let maximumForms = 4
    /// The most request-body bytes a `transaction` list's contents take: every form a PNG of
    /// ``FIDO/UAFTransactionPNG/maximumBytes`` as unpadded base64url
    /// (`TransactionImage.maximumContentLength`: 4 × 43,691). The request
    /// route takes it beyond the default body limit, which covers the rest (characteristics
    /// with a full palette, username).
    static let maximumContentLength = maximumForms * TransactionImage.maximumContentLength

    /// `transactionText`: one `text/plain` form.
    ///
    /// - Throws: 400 `invalid_field` (`field`) for empty, too long or control characters.
    static func text(_ text: String, field: String = "transactionText") throws -> UAFTransactionContents {
        let bytes = try checkedText(text, field: field)
        return UAFTransactionContents(
            transactions: [UAFTransaction(contentType: "text/plain", content: Base64URL.encode(bytes))], shown: [UAFShownTransaction(content: bytes)])
    }

    /// A `transaction` list of forms.
    ///
    /// - Throws: 400 `invalid_field` naming the member (`transaction[1].contentType`) for a
    ///   shape the protocol does not allow; for a PNG that fails ``FIDO/UAFTransactionPNG``,
    ///   `uaf_transaction_png_malformed`, `…_unsupported_chunk`, `…_too_large` or
    ///   `…_characteristics_mismatch`, with `field` `transaction[i].content`.
    static func list(_ forms: [UAFAuthenticationRequestBody.TransactionContent]) throws -> UAFTransactionContents {
        guard (1...maximumForms).contains(forms.count) else {
            throw HTTPError.invalid("transaction", "A transaction list holds 1-\(maximumForms) forms of one transaction.")
        }
        var transactions: [UAFTransaction] = []
        var shown: [UAFShownTransaction] = []
        for (i, form) in forms.enumerated() {
            let field = "transaction[\(i)]"
            guard let content = Base64URL.decode(form.content), !content.isEmpty else {
                throw HTTPError.invalid("\(field).content", "content is the base64url of the content, unpadded.")
            }
            switch form.contentType {
            case "text/plain":
                guard form.tcDisplayPNGCharacteristics == nil else {
                    throw HTTPError.invalid("\(field).tcDisplayPNGCharacteristics", "Only image/png content has tcDisplayPNGCharacteristics.")
                }
                guard let text = String(validating: content, as: UTF8.self) else {
                    throw HTTPError.invalid("\(field).content", "text/plain content must be UTF-8.")
                }
                _ = try checkedText(text, field: "\(field).content")
                transactions.append(UAFTransaction(contentType: "text/plain", content: form.content))
            case "image/png":
                // §3.5.2: tcDisplayPNGCharacteristics MUST be present for image/png.
                guard let value = form.tcDisplayPNGCharacteristics,
                    let characteristics = try? JSONValueDecoder().decode(UAFDisplayPNGCharacteristics.self, from: value)
                else {
                    throw HTTPError.invalid(
                        "\(field).tcDisplayPNGCharacteristics", "image/png content needs its DisplayPNGCharacteristicsDescriptor.")
                }
                do throws(UAFTransactionPNGError) {
                    try UAFTransactionPNG(bytes: content).check(characteristics)
                } catch {
                    throw HTTPError(.transactionPNGRefused(error), detail: error.detail, field: "\(field).content")
                }
                transactions.append(UAFTransaction(contentType: "image/png", content: form.content, tcDisplayPNGCharacteristics: characteristics))
            default:
                throw HTTPError.invalid("\(field).contentType", "contentType is text/plain or image/png.")
            }
            shown.append(UAFShownTransaction(content: content))
        }
        return UAFTransactionContents(transactions: transactions, shown: shown)
    }

    /// 1-200 characters, no control characters but newlines; its UTF-8.
    private static func checkedText(_ text: String, field: String) throws -> [UInt8] {
        guard !text.isEmpty, text.count <= maximumText,
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" })
        else { throw HTTPError.invalid(field, "Transaction text is 1-\(maximumText) characters without control characters.") }
        return Array(text.utf8)
    }
}
