import Schema

extension TransactionDetails {
    /// The forms a FIDO UAF authenticator may show of these details: ``uafDisplayText`` as
    /// `text/plain`, then each image as `image/png` with its characteristics
    /// (``UAFTransactionConfirmation/transactions(text:images:)``). The authentication service
    /// sends them all in the AuthenticationRequest and accepts the hash of any of them; the
    /// transaction service checks the signed hash against the same list before it issues a
    /// tcToken.
    public var uafTransactions: [UAFTransaction] {
        UAFTransactionConfirmation.transactions(
            text: uafDisplayText, images: (images ?? []).map { ($0.content, $0.tcDisplayPNGCharacteristics) })
    }
}
