import Crypto

/// The hash functions TPM attestation names (`alg` for `extraData`, `nameAlg` for the attested
/// Name): SHA-1, SHA-256, SHA-384, SHA-512.
///
/// SHA-256, -384 and -512 through Crypto's `SHA2` (no allocation, no implementation fetch per
/// call), SHA-1 through `InsecureSHA1`.
enum AttestationDigest: Sendable, Hashable {
    case sha1, sha256, sha384, sha512

    /// Output length in bytes.
    var size: Int {
        switch self {
        case .sha1: 20
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// The digest of `data`.
    func hash(_ data: [UInt8]) -> [UInt8] {
        switch self {
        case .sha256: return SHA256.hash(data)
        // SHA-1 only where a TPM fixes it (RS1 extraData, SHA-1 Names of older TPMs).
        case .sha1: return InsecureSHA1.hash(data)
        case .sha384, .sha512: return SHA2.hash(data, length: size)
        }
    }

    /// The hash of a COSE signature algorithm (what TPM `extraData` is computed with).
    init?(_ alg: COSEAlgorithm) {
        switch alg {
        case .rs1: self = .sha1
        case .es256, .rs256, .ps256: self = .sha256
        case .es384, .rs384, .ps384: self = .sha384
        case .es512, .rs512, .ps512: self = .sha512
        default: return nil
        }
    }

    /// A TPM_ALG_ID hash (TPM 2.0 Part 2 §6.3): 0x0004 SHA1, 0x000B SHA256, 0x000C SHA384,
    /// 0x000D SHA512.
    init?(tpmAlgorithm: UInt16) {
        switch tpmAlgorithm {
        case 0x0004: self = .sha1
        case 0x000B: self = .sha256
        case 0x000C: self = .sha384
        case 0x000D: self = .sha512
        default: return nil
        }
    }
}
