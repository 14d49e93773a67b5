import Platform

/// Why a FIDO Metadata Service (MDS3) BLOB was refused, or a metadata source failed.
///
/// - Important: ``description`` carries only the code, so it can go into logs and problem+json
///   bodies. ``debugDescription`` adds a fixed explanation: which member (as a JSON Pointer),
///   which certificate of `x5c` (by index), OpenSSL's reason for a rejected path. It never
///   carries certificate contents, key material or signature bytes.
public struct MetadataError: CodedError {
    /// A stable name for each way metadata can be refused. Compare with the static members; use
    /// ``rawValue`` on the wire.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            case tooLarge = "metadata_too_large"
            case malformed = "metadata_malformed"
            case x5uNotSupported = "metadata_x5u_not_supported"
            case certificateInvalid = "metadata_certificate_invalid"
            case certificateExpired = "metadata_certificate_expired"
            case certificateNotYetValid = "metadata_certificate_not_yet_valid"
            case chainUntrusted = "metadata_chain_untrusted"
            case algorithmNotAllowed = "metadata_algorithm_not_allowed"
            case signatureInvalid = "metadata_signature_invalid"
            case payloadMalformed = "metadata_payload_malformed"
            case notNewer = "metadata_not_newer"
            case sourceUnavailable = "metadata_source_unavailable"
            case configurationInvalid = "metadata_configuration_invalid"
            case certificateRevoked = "metadata_certificate_revoked"
            case revocationUnknown = "metadata_revocation_unknown"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The BLOB is over the configured size limit (checked before anything is decoded).
        public static let tooLarge = Code(.tooLarge)
        /// Not a compact JWS: wrong number of parts, bad base64url, bad header JSON, a `crit`
        /// header, an `x5c` that is not an array of base64 strings.
        public static let malformed = Code(.malformed)
        /// The header names its chain by URL (`x5u`). Signet never fetches while verifying.
        public static let x5uNotSupported = Code(.x5uNotSupported)
        /// An `x5c` certificate does not parse (or there are too many of them).
        public static let certificateInvalid = Code(.certificateInvalid)
        /// A certificate of the signing chain has expired at the verification time.
        public static let certificateExpired = Code(.certificateExpired)
        /// A certificate of the signing chain is not yet valid at the verification time.
        public static let certificateNotYetValid = Code(.certificateNotYetValid)
        /// The signing chain does not lead to a configured metadata root.
        public static let chainUntrusted = Code(.chainUntrusted)
        /// The header's `alg` is not one the signing key can use under the allowed algorithms.
        public static let algorithmNotAllowed = Code(.algorithmNotAllowed)
        /// The JWS signature does not verify with the signing certificate's key.
        public static let signatureInvalid = Code(.signatureInvalid)
        /// The signed payload is not an MDS3 BLOB payload (`no`, `nextUpdate`, `entries`).
        public static let payloadMalformed = Code(.payloadMalformed)
        /// The BLOB's serial number `no` is not greater than the one already loaded.
        public static let notNewer = Code(.notNewer)
        /// The metadata source could not be read.
        public static let sourceUnavailable = Code(.sourceUnavailable)
        /// The configuration cannot verify anything (no root, a non-positive size limit).
        public static let configurationInvalid = Code(.configurationInvalid)
        /// A certificate of the signing chain is listed in its issuer's CRL.
        public static let certificateRevoked = Code(.certificateRevoked)
        /// The revocation of a certificate of the signing chain could not be established: the
        /// CRL its distribution point names could not be fetched or parsed, or is not current,
        /// or is not signed by the certificate's issuer.
        public static let revocationUnknown = Code(.revocationUnknown)

        /// Every code, for documentation and HTTP mapping tests.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// The stable string, e.g. `metadata_signature_invalid`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What was refused.
    public let code: Code
    /// A fixed explanation for operators.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    public let line: Int

    public init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }


}
