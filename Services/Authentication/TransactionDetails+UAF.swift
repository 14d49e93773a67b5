import FIDO
import Schema

extension TransactionDetails {
    /// What TransactionContentHash may be the hash of (one entry per form of
    /// ``FIDO/Schema/TransactionDetails/uafTransactions``).
    var uafShown: [UAFShownTransaction] { uafTransactions.compactMap(UAFShownTransaction.init) }
}
