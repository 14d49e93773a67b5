import Crypto

/// The JWS signature algorithms Signet signs or verifies (RFC 7518 §3, RFC 8037 §3.1).
///
/// There is deliberately no `none` and no HS*: an unsecured JWS is never accepted, and HMAC
/// needs a shared-secret key type that Signet does not have. Parsing either name fails with
/// `unsupported_algorithm`, which is what defeats the classic RS/ES → HS confusion attack
/// (a public key's bytes used as an HMAC secret).
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// ECDSA P-256 / SHA-256, signature r‖s (64 bytes). Signet's default.
    case es256 = "ES256"
    /// ECDSA P-384 / SHA-384, signature r‖s (96 bytes).
    case es384 = "ES384"
    /// ECDSA P-521 / SHA-512, signature r‖s (132 bytes).
    case es512 = "ES512"
    /// RSASSA-PKCS1-v1_5 / SHA-256.
    case rs256 = "RS256"
    /// RSASSA-PKCS1-v1_5 / SHA-384.
    case rs384 = "RS384"
    /// RSASSA-PKCS1-v1_5 / SHA-512.
    case rs512 = "RS512"
    /// RSASSA-PSS / SHA-256, MGF1 SHA-256, salt 32 bytes.
    case ps256 = "PS256"
    /// RSASSA-PSS / SHA-384.
    case ps384 = "PS384"
    /// RSASSA-PSS / SHA-512.
    case ps512 = "PS512"
    /// EdDSA with an Ed25519 key (RFC 8037).
    case edDSA = "EdDSA"

    /// The JOSE name.
    public var description: String { rawValue }

    /// A supported algorithm from its JOSE name.
    ///
    /// - Throws: `unsupported_algorithm` for `none`, HS*, and anything unknown. Names are
    ///   case-sensitive (RFC 7515 §4.1.1): `es256` is refused too.
    public init(joseName name: String) throws(JOSEError) {
        guard let algorithm = JWSAlgorithm(rawValue: name) else {
            let kind =
                name == "none" ? "unsecured JWS (none)" : name.hasPrefix("HS") ? "HMAC algorithm" : "unknown algorithm"
            throw JOSEError(.unsupportedAlgorithm, "\(kind) refused")
        }
        self = algorithm
    }

    /// The Crypto module's name for it.
    public var signatureAlgorithm: SignatureAlgorithm {
        switch self {
        case .es256: .es256
        case .es384: .es384
        case .es512: .es512
        case .rs256: .rs256
        case .rs384: .rs384
        case .rs512: .rs512
        case .ps256: .ps256
        case .ps384: .ps384
        case .ps512: .ps512
        case .edDSA: .ed25519
        }
    }

    /// For ECDSA, the curve the algorithm is bound to; JWS signatures are r‖s of twice its
    /// coordinate size.
    public var curve: Curve? {
        switch self {
        case .es256: .p256
        case .es384: .p384
        case .es512: .p521
        default: nil
        }
    }

    /// Whether the algorithm is one of the RSA ones.
    public var isRSA: Bool {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: true
        default: false
        }
    }

    /// The algorithms a key of `kind` can verify: exactly one for EC and Ed25519 keys, the six
    /// RSA ones for an RSA key.
    public static func algorithms(for kind: PublicKey.Kind) -> Set<JWSAlgorithm> {
        switch kind {
        case .ec(.p256): [.es256]
        case .ec(.p384): [.es384]
        case .ec(.p521): [.es512]
        // No JOSE ES256K here (RFC 8812): secp256k1 keys are FIDO UAF's only.
        case .ec(.secp256k1): []
        case .ed25519: [.edDSA]
        // JOSE's EdDSA is Ed25519 only here (JWK OKP keys are read as Ed25519).
        case .ed448: []
        case .rsa: [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512]
        }
    }
}
