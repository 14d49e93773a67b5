import Crypto

/// A COSE algorithm identifier (IANA "COSE Algorithms"), as used in `pubKeyCredParams`,
/// credential public keys and attestation statements (`COSEAlgorithmIdentifier` in WebAuthn).
///
/// Any integer can be represented, so that unknown values read from input can be reported
/// and refused; ``signatureAlgorithm`` says which of them Signet can verify.
public struct COSEAlgorithm: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA w/ SHA-256 on P-256.
    public static let es256 = COSEAlgorithm(-7)
    /// EdDSA (with OKP keys: Ed25519 or Ed448, by the key's curve).
    public static let eddsa = COSEAlgorithm(-8)
    /// Ed25519, fully specified (RFC 9864).
    public static let ed25519 = COSEAlgorithm(-19)
    /// ECDSA w/ SHA-384 on P-384.
    public static let es384 = COSEAlgorithm(-35)
    /// ECDSA w/ SHA-512 on P-521.
    public static let es512 = COSEAlgorithm(-36)
    /// RSASSA-PSS w/ SHA-256.
    public static let ps256 = COSEAlgorithm(-37)
    /// RSASSA-PSS w/ SHA-384.
    public static let ps384 = COSEAlgorithm(-38)
    /// RSASSA-PSS w/ SHA-512.
    public static let ps512 = COSEAlgorithm(-39)
    /// Ed448, fully specified (RFC 9864).
    public static let ed448 = COSEAlgorithm(-53)
    /// ML-DSA-44 (FIPS 204). Recognised but not verifiable with OpenSSL 3.0.
    public static let mlDSA44 = COSEAlgorithm(-48)
    /// ML-DSA-65 (FIPS 204). Recognised but not verifiable with OpenSSL 3.0.
    public static let mlDSA65 = COSEAlgorithm(-49)
    /// ML-DSA-87 (FIPS 204). Recognised but not verifiable with OpenSSL 3.0.
    public static let mlDSA87 = COSEAlgorithm(-50)
    /// RSASSA-PKCS1-v1_5 w/ SHA-256.
    public static let rs256 = COSEAlgorithm(-257)
    /// RSASSA-PKCS1-v1_5 w/ SHA-384.
    public static let rs384 = COSEAlgorithm(-258)
    /// RSASSA-PKCS1-v1_5 w/ SHA-512.
    public static let rs512 = COSEAlgorithm(-259)
    /// RSASSA-PKCS1-v1_5 w/ SHA-1 (TPM attestation only; never offer it in `pubKeyCredParams`).
    public static let rs1 = COSEAlgorithm(-65535)

    /// Every algorithm whose signatures Signet can verify.
    public static let verifiable: [COSEAlgorithm] = [
        .es256, .eddsa, .ed25519, .ed448, .es384, .es512, .ps256, .ps384, .ps512, .rs256, .rs384, .rs512, .rs1,
    ]

    /// The algorithms a credential may use unless a policy says otherwise: everything
    /// verifiable except SHA-1.
    public static let defaultAllowed: [COSEAlgorithm] = [
        .es256, .eddsa, .ed25519, .ed448, .es384, .es512, .ps256, .ps384, .ps512, .rs256, .rs384, .rs512,
    ]

    /// The Crypto algorithm that verifies this one, or nil when Signet cannot verify it. For
    /// EdDSA (-8) it is Ed25519's; an Ed448 key under -8 is bound to Ed448 by its curve
    /// (``COSEKey``).
    public var signatureAlgorithm: SignatureAlgorithm? {
        switch self {
        case .es256: .es256
        case .es384: .es384
        case .es512: .es512
        case .eddsa, .ed25519: .ed25519
        case .ed448: .ed448
        case .ps256: .ps256
        case .ps384: .ps384
        case .ps512: .ps512
        case .rs256: .rs256
        case .rs384: .rs384
        case .rs512: .rs512
        case .rs1: .rs1
        default: nil
        }
    }

    /// The IANA name, e.g. `ES256`, or the number for unregistered values.
    public var name: String {
        switch self {
        case .es256: "ES256"
        case .eddsa: "EdDSA"
        case .ed25519: "Ed25519"
        case .ed448: "Ed448"
        case .es384: "ES384"
        case .es512: "ES512"
        case .ps256: "PS256"
        case .ps384: "PS384"
        case .ps512: "PS512"
        case .mlDSA44: "ML-DSA-44"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        case .rs256: "RS256"
        case .rs384: "RS384"
        case .rs512: "RS512"
        case .rs1: "RS1"
        default: String(rawValue)
        }
    }

    public var description: String { "\(name) (\(rawValue))" }
}
