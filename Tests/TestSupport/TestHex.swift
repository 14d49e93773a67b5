import Crypto

/// Lower-case hex of digests, as operators write them in configuration (`SIGNET_INTERNAL_CALLERS`).
public enum TestHex {
    /// The SHA-256 of `text`'s UTF-8, 64 lower-case hex digits.
    public static func sha256(_ text: String) -> String {
        SHA256.hash(Array(text.utf8)).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }
}
