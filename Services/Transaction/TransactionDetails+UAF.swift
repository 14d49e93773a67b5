import FIDO
import Schema

extension TransactionDetails {
    /// The forms a FIDO UAF authenticator may show of these details: ``uafDisplayText`` as
    /// `text/plain`, then each image as `image/png` with its characteristics
    /// (``FIDO/UAFTransactionConfirmation/transactions(text:images:)``): what the authenticator
    /// may have signed the hash of, as the authentication service sent them.
    var uafTransactions: [UAFTransaction] {
        UAFTransactionConfirmation.transactions(
            text: uafDisplayText, images: (images ?? []).map { ($0.content, $0.tcDisplayPNGCharacteristics) })
    }
}
