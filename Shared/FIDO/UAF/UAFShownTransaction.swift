import Crypto

/// One form of the transaction content a server sent for the user to confirm, as verification
/// needs it: the content's hash under each hash function a UAF signature algorithm may use
/// (SHA-256, SHA-384, SHA-512; UAF Registry §3.6.1). TransactionContentHash is the hash of the
/// content with the assertion's algorithm (UAF Protocol §3.5.7.5 step 4.d), unknown when the
/// request is made, so all three are kept: a PNG of 32 KiB need not travel back in `serverData`.
///
/// Encoded as `{"s256","s384","s512"}` (base64url), which is how `serverData` seals it.
public struct UAFShownTransaction: Codable, Sendable, Hashable {
    public let sha256: [UInt8]
    public let sha384: [UInt8]
    public let sha512: [UInt8]

    /// The hashes of `content` (the bytes the authenticator shows: UTF-8 text or a PNG file).
    public init(content: [UInt8]) {
        sha256 = AttestationDigest.sha256.hash(content)
        sha384 = AttestationDigest.sha384.hash(content)
        sha512 = AttestationDigest.sha512.hash(content)
    }

    /// The hashes of a Transaction's decoded `content`; nil when it is not base64url.
    public init?(_ transaction: UAFTransaction) {
        guard let content = Base64URL.decode(transaction.content) else { return nil }
        self.init(content: content)
    }

    /// The content's hash with `algorithm`'s hash function; nil for an algorithm Signet cannot verify.
    public func hash(for algorithm: UAFSignatureAlgorithm) -> [UInt8]? {
        switch algorithm.digest {
        case .sha256?: sha256
        case .sha384?: sha384
        case .sha512?: sha512
        default: nil
        }
    }

    private enum CodingKeys: String, CodingKey { case s256, s384, s512 }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func field(_ key: CodingKeys, _ size: Int) throws -> [UInt8] {
            guard let bytes = Base64URL.decode(try c.decode(String.self, forKey: key)), bytes.count == size else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not a base64url digest of \(size) bytes")
            }
            return bytes
        }
        sha256 = try field(.s256, 32)
        sha384 = try field(.s384, 48)
        sha512 = try field(.s512, 64)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Base64URL.encode(sha256), forKey: .s256)
        try c.encode(Base64URL.encode(sha384), forKey: .s384)
        try c.encode(Base64URL.encode(sha512), forKey: .s512)
    }
}
