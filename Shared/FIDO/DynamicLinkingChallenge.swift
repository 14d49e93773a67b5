import Crypto

/// The WebAuthn challenge of a transaction confirmation (dynamic linking, PSD2 RTS art. 5):
/// `SHA-256("signet-dynamic-link-v1" ‖ 0x00 ‖ detailsHash ‖ nonce)`, where `detailsHash` is
/// the SHA-256 of the canonical details the user is shown (`Schema.TransactionDetails`) and
/// `nonce` 16 fresh random bytes per challenge. The assertion thus commits to the exact amount,
/// currency, payee and text: a change after display gives another challenge, and the signature
/// no longer matches it.
public enum DynamicLinkingChallenge {
    public static let label = "signet-dynamic-link-v1"

    public static func derive(detailsHash: [UInt8], nonce: [UInt8]) -> [UInt8] {
        SHA256.hash(Array(label.utf8) + [0] + detailsHash + nonce)
    }
}
