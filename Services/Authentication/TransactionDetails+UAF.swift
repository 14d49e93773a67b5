import FIDO
import Schema

extension TransactionDetails {
    /// The forms a FIDO UAF authenticator may show of these details: ``uafDisplayText`` as
    /// `text/plain`, then each image as `image/png` with its characteristics
    /// (``FIDO/UAFTransactionConfirmation/transactions(text:images:)``). The request sends them
    /// all, and verification accepts the hash of any of them, as the transaction service does.
    var uafTransactions: [UAFTransaction] {
        UAFTransactionConfirmation.transactions(
            text: uafDisplayText, images: (images ?? []).map { ($0.content, $0.tcDisplayPNGCharacteristics) })
    }

    /// What TransactionContentHash may be the hash of (one entry per form of ``uafTransactions``).
    var uafShown: [UAFShownTransaction] { uafTransactions.compactMap(UAFShownTransaction.init) }
}
