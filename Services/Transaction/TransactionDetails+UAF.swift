import FIDO
import Schema

extension TransactionDetails {
    /// The forms a FIDO UAF authenticator may show of these details: ``uafDisplayText`` as
    /// `text/plain`, then each image as `image/png` with its characteristics
    /// (``FIDO/UAFTransactionConfirmation/transactions(text:images:)``): what the authenticator
    /// may have signed the hash of, as the authentication service sent them.
    var uafTransactions: [UAFTransaction] {
        UAFTransactionConfirmation.transactions(
            text: uafDisplayText, images: (images ?? []).map { ($0.content, UAFDisplayPNGCharacteristics($0.tcDisplayPNGCharacteristics)) })
    }
}

extension UAFDisplayPNGCharacteristics {
    /// The descriptor as ``Schema/TransactionImage`` carries it.
    init(_ c: TransactionImage.Characteristics) {
        self.init(
            width: c.width, height: c.height, bitDepth: c.bitDepth, colorType: c.colorType, compression: c.compression, filter: c.filter,
            interlace: c.interlace, plte: c.plte?.map { UAFRGBPaletteEntry(r: $0.r, g: $0.g, b: $0.b) })
    }
}
