import Platform

/// Why a JOSE object (JWS, JWT, JWK, JWK Set) was refused or could not be produced.
///
/// `code` is stable and meant for problem+json bodies, metrics and tests; `description` names
/// only the code. The detail (which member, which limit) is in `debugDescription`, for
/// debugging: it names members and limits, never claim values, keys or tokens.
public struct JOSEError: CodedError {
    /// A stable error code, `rawValue` in snake_case (`signature_invalid`).
    ///
    /// A struct over a private enum so that codes can be added without breaking callers that
    /// switch over the ones they care about.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable {
            case malformed
            case tooLarge = "too_large"
            case unsupportedAlgorithm = "unsupported_algorithm"
            case algorithmMismatch = "algorithm_mismatch"
            case unsupportedCriticalHeader = "unsupported_critical_header"
            case unknownKey = "unknown_key"
            case invalidKey = "invalid_key"
            case unsupportedKey = "unsupported_key"
            case signatureInvalid = "signature_invalid"
            case typeMismatch = "type_mismatch"
            case expired
            case notYetValid = "not_yet_valid"
            case lifetimeTooLong = "lifetime_too_long"
            case issuerMismatch = "issuer_mismatch"
            case audienceMismatch = "audience_mismatch"
            case missingClaim = "missing_claim"
            case invalidClaim = "invalid_claim"
            case signingFailed = "signing_failed"
            case keyFileUnreadable = "key_file_unreadable"
        }

        let base: Base

        /// Not a compact JWS, bad base64url, bad JSON, a header or member of the wrong type.
        public static let malformed = Code(base: .malformed)
        /// The token, a header or a key set is over its size or count limit.
        public static let tooLarge = Code(base: .tooLarge)
        /// `none`, HS*, an unknown `alg`, or a key that cannot be used under the allowed algorithms.
        public static let unsupportedAlgorithm = Code(base: .unsupportedAlgorithm)
        /// The header's `alg` is not the algorithm fixed by the key.
        public static let algorithmMismatch = Code(base: .algorithmMismatch)
        /// `crit` names an extension this verifier does not understand (RFC 7515 §4.1.11).
        public static let unsupportedCriticalHeader = Code(base: .unsupportedCriticalHeader)
        /// No key with the token's `kid` (or no `kid` where one is needed).
        public static let unknownKey = Code(base: .unknownKey)
        /// A key that is malformed, inconsistent, too weak or not meant for signatures.
        public static let invalidKey = Code(base: .invalidKey)
        /// A key type or curve Signet does not handle (`oct`, X25519, Ed448…).
        public static let unsupportedKey = Code(base: .unsupportedKey)
        /// The signature does not verify.
        public static let signatureInvalid = Code(base: .signatureInvalid)
        /// The header's `typ` is not the expected one.
        public static let typeMismatch = Code(base: .typeMismatch)
        /// `exp` has passed (beyond the leeway).
        public static let expired = Code(base: .expired)
        /// `nbf` (or `iat`) is in the future (beyond the leeway).
        public static let notYetValid = Code(base: .notYetValid)
        /// `exp` is further from `iat` (or `nbf`) than the allowed maximum lifetime.
        public static let lifetimeTooLong = Code(base: .lifetimeTooLong)
        /// `iss` is not the expected issuer.
        public static let issuerMismatch = Code(base: .issuerMismatch)
        /// `aud` does not contain the expected audience.
        public static let audienceMismatch = Code(base: .audienceMismatch)
        /// A required claim is absent.
        public static let missingClaim = Code(base: .missingClaim)
        /// A registered claim has the wrong type (`exp` as a string, `aud` as a number…).
        public static let invalidClaim = Code(base: .invalidClaim)
        /// The private key refused to sign.
        public static let signingFailed = Code(base: .signingFailed)
        /// A configured key file could not be read.
        public static let keyFileUnreadable = Code(base: .keyFileUnreadable)

        /// The stable snake_case name, e.g. `signature_invalid`.
        public var rawValue: String { base.rawValue }
        /// The same as ``rawValue``.
        public var description: String { base.rawValue }
    }

    /// The stable code.
    public let code: Code
    /// What exactly was wrong; member names and limits only.
    public let detail: String
    /// The file where the error was raised (`#fileID`).
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }


}
