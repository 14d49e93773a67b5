import Crypto
import JSON

/// A public JSON Web Key (RFC 7517): EC P-256/P-384/P-521 (RFC 7518 §6.2), RSA (§6.3) or
/// OKP Ed25519 (RFC 8037).
///
/// Parsing is strict: `kty` and its required members must be present with the right types,
/// base64url must be canonical and unpadded, coordinates must have the curve's exact length
/// and lie on the curve, RSA moduli must be 2048–8192 bits without leading zero octets, an
/// `alg` that names a JWS algorithm must fit the key, and private members (`d`, `p`, `q`,
/// `dp`, `dq`, `qi`, `oth`, `k`) are refused: a public JWK carrying its private half is a
/// leaked key, not something to verify with.
public struct JWK: Sendable, Hashable {
    /// The key material, by key type.
    public enum Parameters: Sendable, Hashable {
        /// `kty: EC` with its curve and affine coordinates (each exactly the coordinate size).
        case ec(curve: Curve, x: [UInt8], y: [UInt8])
        /// `kty: RSA` with big-endian modulus and public exponent, no leading zero octets.
        case rsa(modulus: [UInt8], exponent: [UInt8])
        /// `kty: OKP`, `crv: Ed25519`, the 32-byte public key.
        case ed25519(x: [UInt8])
    }

    /// Largest JWK text accepted by ``init(json:)`` (an RSA-8192 JWK is about 1.5 KiB).
    public static let maximumSize = 8 * 1024
    /// Longest `kid` accepted, in UTF-8 bytes.
    public static let maximumKeyIDLength = 256

    /// The key material.
    public var parameters: Parameters
    /// `kid`.
    public var keyID: String?
    /// `use` ("sig", "enc"); keys with another `use` than "sig" never verify a JWS.
    public var use: String?
    /// `alg` as published. It may name a non-JWS algorithm (a peer's `RSA-OAEP` encryption
    /// key); ``jwsAlgorithm`` is set only when it names one Signet knows.
    public var algorithm: String?
    /// `key_ops`.
    public var keyOperations: [String]?

    /// A JWK from its parts. Nothing is validated here: ``JWKSet/init(keys:)`` and
    /// ``publicKey()`` do that.
    public init(
        parameters: Parameters, keyID: String? = nil, use: String? = nil, algorithm: String? = nil,
        keyOperations: [String]? = nil
    ) {
        self.parameters = parameters
        self.keyID = keyID
        self.use = use
        self.algorithm = algorithm
        self.keyOperations = keyOperations
    }

    /// `alg` as a JWS algorithm, when it names one Signet supports.
    public var jwsAlgorithm: JWSAlgorithm? { algorithm.flatMap(JWSAlgorithm.init(rawValue:)) }

    /// The JWK's `kty`.
    public var keyType: String {
        switch parameters {
        case .ec: "EC"
        case .rsa: "RSA"
        case .ed25519: "OKP"
        }
    }

    // MARK: - Parsing

    /// Parses and validates one JWK from JSON text.
    ///
    /// - Throws: `JOSEError` — `malformed` (not a JSON object, member of the wrong type),
    ///   `too_large`, `unsupported_key` (unknown `kty` or `crv`, including `oct`), `invalid_key`
    ///   (bad base64url, lengths, point not on the curve, weak RSA, private members, `alg`
    ///   that does not fit the key).
    public init(json: [UInt8]) throws(JOSEError) {
        guard json.count <= JWK.maximumSize else { throw JOSEError(.tooLarge, "JWK over \(JWK.maximumSize) bytes") }
        self = try JWK.validated(JSONParser.parseObject(json, what: "JWK")).jwk
    }

    /// Parses and validates one JWK from JSON text.
    public init(json: String) throws(JOSEError) { try self.init(json: Array(json.utf8)) }

    /// Validates one JWK given as parsed JSON members.
    public init(jsonObject: [String: JSONValue]) throws(JOSEError) {
        self = try JWK.validated(jsonObject).jwk
    }

    /// Members that only a private key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2).
    private static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Parses, validates, and returns the OpenSSL key built on the way, so that a key set
    /// does not build every key twice.
    static func validated(_ object: [String: JSONValue]) throws(JOSEError) -> (jwk: JWK, publicKey: PublicKey) {
        guard let kty = object["kty"] else { throw JOSEError(.invalidKey, "JWK without kty") }
        guard case .string(let keyType) = kty else { throw JOSEError(.malformed, "JWK kty is not a string") }

        let parameters: Parameters
        switch keyType {
        case "EC":
            let crv = try requiredString(object, "crv")
            let curve: Curve
            switch crv {
            case "P-256": curve = .p256
            case "P-384": curve = .p384
            case "P-521": curve = .p521
            default: throw JOSEError(.unsupportedKey, "EC curve not supported")
            }
            let x = try requiredBytes(object, "x")
            let y = try requiredBytes(object, "y")
            guard x.count == curve.coordinateSize, y.count == curve.coordinateSize else {
                throw JOSEError(.invalidKey, "EC coordinates must be \(curve.coordinateSize) bytes")
            }
            parameters = .ec(curve: curve, x: x, y: y)
        case "RSA":
            let n = try requiredBytes(object, "n")
            let e = try requiredBytes(object, "e")
            // RFC 7518 §2 Base64urlUInt: the minimum number of octets.
            guard n.first != 0, e.first != 0 else { throw JOSEError(.invalidKey, "RSA n or e has leading zero octets") }
            guard (256...1024).contains(n.count) else { throw JOSEError(.invalidKey, "RSA modulus must be 2048 to 8192 bits") }
            guard (1...8).contains(e.count), e.last.map({ $0 & 1 == 1 }) == true, e != [1] else {
                throw JOSEError(.invalidKey, "RSA exponent out of range")
            }
            parameters = .rsa(modulus: n, exponent: e)
        case "OKP":
            let crv = try requiredString(object, "crv")
            guard crv == "Ed25519" else { throw JOSEError(.unsupportedKey, "OKP curve not supported") }
            let x = try requiredBytes(object, "x")
            guard x.count == 32 else { throw JOSEError(.invalidKey, "Ed25519 x must be 32 bytes") }
            parameters = .ed25519(x: x)
        default:
            throw JOSEError(.unsupportedKey, "JWK kty not supported")
        }

        for member in privateMembers where object[member] != nil {
            throw JOSEError(.invalidKey, "public JWK carries private member \(member)")
        }

        let keyID = try optionalString(object, "kid")
        let use = try optionalString(object, "use")
        let algorithm = try optionalString(object, "alg")
        var keyOperations: [String]?
        if let ops = object["key_ops"] {
            guard let list = ops.stringArrayValue else { throw JOSEError(.malformed, "JWK key_ops is not an array of strings") }
            keyOperations = list
        }

        let jwk = JWK(parameters: parameters, keyID: keyID, use: use, algorithm: algorithm, keyOperations: keyOperations)
        return (jwk, try jwk.validatedPublicKey())
    }

    /// The key, after the checks that span members: valid key material, an `alg` that fits
    /// it, a bounded `kid`, distinct `key_ops`.
    func validatedPublicKey() throws(JOSEError) -> PublicKey {
        if let keyID, keyID.utf8.count > JWK.maximumKeyIDLength {
            throw JOSEError(.invalidKey, "kid longer than \(JWK.maximumKeyIDLength) bytes")
        }
        if let keyOperations, Set(keyOperations).count != keyOperations.count {
            throw JOSEError(.invalidKey, "JWK key_ops has duplicates")
        }
        let publicKey = try publicKey()
        if let jwsAlgorithm, !JWSAlgorithm.algorithms(for: publicKey.kind).contains(jwsAlgorithm) {
            throw JOSEError(.invalidKey, "JWK alg does not fit its key type")
        }
        return publicKey
    }

    private static func requiredString(_ object: [String: JSONValue], _ name: String) throws(JOSEError) -> String {
        guard let value = object[name] else { throw JOSEError(.invalidKey, "JWK without \(name)") }
        guard case .string(let s) = value else { throw JOSEError(.malformed, "JWK \(name) is not a string") }
        return s
    }

    private static func optionalString(_ object: [String: JSONValue], _ name: String) throws(JOSEError) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let s) = value else { throw JOSEError(.malformed, "JWK \(name) is not a string") }
        return s
    }

    private static func requiredBytes(_ object: [String: JSONValue], _ name: String) throws(JOSEError) -> [UInt8] {
        let text = try requiredString(object, name)
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else {
            throw JOSEError(.invalidKey, "JWK \(name) is not canonical base64url")
        }
        return bytes
    }

    // MARK: - Serialization

    /// The JWK's members: key material, then `kid`, `use`, `alg`, `key_ops` where set.
    public var jsonObject: [String: JSONValue] {
        var object = requiredMembers
        if let keyID { object["kid"] = .string(keyID) }
        if let use { object["use"] = .string(use) }
        if let algorithm { object["alg"] = .string(algorithm) }
        if let keyOperations { object["key_ops"] = .array(keyOperations.map(JSONValue.string)) }
        return object
    }

    /// Compact JSON text with members sorted by name.
    public var jsonString: String { JSONValue.object(jsonObject).jsonString }

    /// The members that define the key (RFC 7638 §3.2), and nothing else.
    private var requiredMembers: [String: JSONValue] {
        switch parameters {
        case .ec(let curve, let x, let y):
            let crv =
                switch curve {
                case .p256: "P-256"
                case .p384: "P-384"
                case .p521: "P-521"
                case .secp256k1: "secp256k1"
                }
            return ["kty": "EC", "crv": .string(crv), "x": .string(Base64URL.encode(x)), "y": .string(Base64URL.encode(y))]
        case .rsa(let n, let e):
            return ["kty": "RSA", "n": .string(Base64URL.encode(n)), "e": .string(Base64URL.encode(e))]
        case .ed25519(let x):
            return ["kty": "OKP", "crv": "Ed25519", "x": .string(Base64URL.encode(x))]
        }
    }

    // MARK: - Thumbprint

    /// The RFC 7638 thumbprint: SHA-256 over the required members in lexicographic order,
    /// without whitespace. Optional members (`kid`, `alg`…) do not change it.
    public var thumbprint: [UInt8] {
        // The required members are ASCII without characters JSON escapes, so the writer's
        // sorted compact output is exactly the RFC 7638 §3 form.
        SHA256.hash(Array(JSONValue.object(requiredMembers).jsonString.utf8))
    }

    /// The RFC 7638 thumbprint, base64url: Signet's `kid` for the keys it generates or loads.
    public var thumbprintBase64URL: String { Base64URL.encode(thumbprint) }
}
