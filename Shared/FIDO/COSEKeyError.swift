import Platform

/// Why a COSE_Key was refused. `code` is stable; nothing of the key is carried.
public struct COSEKeyError: CodedError {
    /// A stable identifier of the failure, e.g. `cose_key_algorithm_mismatch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case malformed = "cose_key_malformed"
            case missingParameter = "cose_key_missing_parameter"
            case invalidParameter = "cose_key_invalid_parameter"
            case unsupportedKeyType = "cose_key_unsupported_key_type"
            case unsupportedAlgorithm = "cose_key_unsupported_algorithm"
            case unsupportedCurve = "cose_key_unsupported_curve"
            case algorithmMismatch = "cose_key_algorithm_mismatch"
            case privateKeyMaterial = "cose_key_private_key_material"
            case invalidKey = "cose_key_invalid_key"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not CBOR, not a map, or keys of the wrong type.
        public static let malformed = Code(.malformed)
        /// `kty`, `alg` or a parameter the key type requires is absent.
        public static let missingParameter = Code(.missingParameter)
        /// A parameter has the wrong CBOR type or length.
        public static let invalidParameter = Code(.invalidParameter)
        /// A `kty` other than OKP (1), EC2 (2), RSA (3) or AKP (7).
        public static let unsupportedKeyType = Code(.unsupportedKeyType)
        /// An `alg` Signet does not know or cannot verify (e.g. ML-DSA with OpenSSL 3.0).
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// A `crv` other than P-256/P-384/P-521 (EC2) or Ed25519 (OKP).
        public static let unsupportedCurve = Code(.unsupportedCurve)
        /// `alg` does not fit `kty`/`crv` (e.g. ES256 on P-384, EdDSA on an EC2 key).
        public static let algorithmMismatch = Code(.algorithmMismatch)
        /// The key carries private parameters (`d`, RSA primes…): never accepted from a client.
        public static let privateKeyMaterial = Code(.privateKeyMaterial)
        /// OpenSSL refused the key (point not on the curve, RSA modulus too small…).
        public static let invalidKey = Code(.invalidKey)

        /// The stable string form.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What failed.
    public let code: Code
    /// A fixed explanation (never key material).
    public let reason: String

    /// Where the error was raised.
    public let file: String
    public let line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var detail: String { reason }

    public var description: String { "COSEKeyError(\(code)): \(reason)" }
}
