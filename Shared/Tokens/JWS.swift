import Crypto

/// A JWS in compact serialization (RFC 7515 §7.1): `header.payload.signature`.
///
/// Parsing checks form only; nothing in a parsed JWS is trustworthy until ``verify(with:)``
/// returns. The key, and with it the algorithm, is the caller's choice
/// (``JWSVerificationKey``); the header's `alg` must merely agree with it.
public struct JWS: Sendable {
    /// Size limits applied before any decoding.
    public struct Limits: Sendable, Hashable {
        /// Longest compact JWS accepted, in bytes.
        public var maximumLength: Int
        /// Longest decoded protected header accepted, in bytes.
        public var maximumHeaderLength: Int

        /// Limits in bytes.
        public init(maximumLength: Int = 16 * 1024, maximumHeaderLength: Int = 2 * 1024) {
            self.maximumLength = maximumLength
            self.maximumHeaderLength = maximumHeaderLength
        }

        /// 16 KiB per token, 2 KiB of header: far above Signet's own tokens, and small enough
        /// that a hostile token costs nothing to refuse. Documents with certificate chains in
        /// the header (MDS3 BLOBs) need larger limits.
        public static let `default` = Limits()
    }

    /// The protected header.
    public let header: JWSHeader
    /// The decoded payload.
    public let payload: [UInt8]
    /// The decoded signature (r‖s for ECDSA).
    public let signature: [UInt8]
    /// ASCII(BASE64URL(header) ‖ '.' ‖ BASE64URL(payload)), what the signature covers.
    let signingInput: [UInt8]

    /// Parses a compact JWS.
    ///
    /// - Parameters:
    ///   - compact: the token text.
    ///   - limits: size bounds, checked before decoding.
    ///   - understoodCriticalParameters: extensions the caller processes; any other name in
    ///     `crit` is refused.
    /// - Throws: `too_large`, `malformed` (not exactly three parts, empty header or
    ///   signature, non-canonical base64url, bad header JSON), `unsupported_algorithm`,
    ///   `unsupported_critical_header`.
    public init(
        compact: String, limits: Limits = .default, understoodCriticalParameters: Set<String> = []
    ) throws(JOSEError) {
        let bytes = Array(compact.utf8)
        guard bytes.count <= limits.maximumLength else {
            throw JOSEError(.tooLarge, "JWS over \(limits.maximumLength) bytes")
        }
        var dots: [Int] = []
        for (i, c) in bytes.enumerated() where c == UInt8(ascii: ".") {
            dots.append(i)
            guard dots.count <= 2 else { throw JOSEError(.malformed, "JWS compact form has more than three parts") }
        }
        guard dots.count == 2 else { throw JOSEError(.malformed, "JWS compact form needs three parts") }
        let headerPart = bytes[..<dots[0]]
        let payloadPart = bytes[(dots[0] + 1)..<dots[1]]
        let signaturePart = bytes[(dots[1] + 1)...]

        // Bound the header by its encoded length before decoding it: 4 characters per 3 bytes.
        guard headerPart.count <= (limits.maximumHeaderLength * 4 + 2) / 3 else {
            throw JOSEError(.tooLarge, "JWS header over \(limits.maximumHeaderLength) bytes")
        }
        guard !headerPart.isEmpty, let headerBytes = Base64URL.decode(headerPart) else {
            throw JOSEError(.malformed, "JWS header is not base64url")
        }
        // The header first, so that `alg: none` (whose signature part is empty) is reported
        // as the unsupported algorithm it is.
        let header = try JWSHeader(json: headerBytes, understoodCriticalParameters: understoodCriticalParameters)
        guard let payload = Base64URL.decode(payloadPart) else {
            throw JOSEError(.malformed, "JWS payload is not base64url")
        }
        guard !signaturePart.isEmpty, let signature = Base64URL.decode(signaturePart) else {
            throw JOSEError(.malformed, "JWS signature is not base64url")
        }

        self.header = header
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(bytes[..<dots[1]])
    }

    /// Verifies the signature with `key`, under `key.algorithm`.
    ///
    /// - Throws: `unknown_key` if the header's `kid` names another key than `key`'s;
    ///   `algorithm_mismatch` if the header's `alg` is not `key.algorithm`;
    ///   `signature_invalid` if the signature does not verify (or has the wrong length).
    public func verify(with key: JWSVerificationKey) throws(JOSEError) {
        if let headerKeyID = header.keyID, let keyID = key.keyID, headerKeyID != keyID {
            throw JOSEError(.unknownKey, "JWS kid does not name the configured key")
        }
        guard header.algorithm == key.algorithm else {
            throw JOSEError(.algorithmMismatch, "JWS alg \(header.algorithm) but the key verifies \(key.algorithm)")
        }
        var signature = self.signature
        if let curve = key.algorithm.curve {
            // RFC 7518 §3.4: r‖s, each exactly the coordinate size; OpenSSL wants DER.
            guard signature.count == 2 * curve.coordinateSize, let der = ECDSASignature.der(fromRaw: signature) else {
                throw JOSEError(.signatureInvalid, "ECDSA signature has the wrong length")
            }
            signature = der
        }
        guard key.publicKey.verify(signature: signature, message: signingInput, algorithm: key.algorithm.signatureAlgorithm)
        else { throw JOSEError(.signatureInvalid, "JWS signature does not verify") }
    }

    /// The longest signature a usual key makes (RSA-4096), for the token buffer's capacity
    /// (a longer one only makes the buffer grow).
    static let maximumSignatureBytes = 512

    /// Signs `payload` under `header` and returns the compact JWS.
    ///
    /// - Throws: `invalid_key` if `header.algorithm` does not fit `key`; `signing_failed`.
    public static func sign(payload: [UInt8], header: JWSHeader, key: PrivateKey) throws(JOSEError) -> String {
        guard JWSAlgorithm.algorithms(for: key.kind).contains(header.algorithm) else {
            throw JOSEError(.invalidKey, "\(header.algorithm) does not fit the signing key")
        }
        return try sign(payload: payload, encodedHeader: encode(header), algorithm: header.algorithm, key: key)
    }

    /// The header's JSON in base64url, as it starts a token.
    static func encode(_ header: JWSHeader) -> [UInt8] {
        var encoded: [UInt8] = []
        Base64URL.append(header.serialized, to: &encoded)
        return encoded
    }

    /// Signs `payload` under a header already encoded (``encode(_:)``: a signer whose header
    /// never changes keeps it) whose algorithm is `algorithm`, which the caller has checked
    /// fits `key`.
    static func sign(payload: [UInt8], encodedHeader: [UInt8], algorithm: JWSAlgorithm, key: PrivateKey) throws(JOSEError) -> String {
        // The token is assembled in one buffer: the signing input (header and payload encoded,
        // with their dot), which is signed as it stands, then the dot and the signature.
        var token: [UInt8] = []
        token.reserveCapacity(encodedHeader.count + Base64URL.encodedCount(payload.count) + 2 + Base64URL.encodedCount(Self.maximumSignatureBytes))
        token.append(contentsOf: encodedHeader)
        token.append(UInt8(ascii: "."))
        Base64URL.append(payload, to: &token)
        let signature: [UInt8]
        do {
            // RFC 7518 §3.4: an ECDSA signature is r‖s, each exactly the coordinate size.
            if algorithm.curve != nil {
                signature = try key.signRawECDSA(token, algorithm: algorithm.signatureAlgorithm)
            } else {
                signature = try key.sign(token, algorithm: algorithm.signatureAlgorithm)
            }
        } catch {
            throw JOSEError(.signingFailed, "signing failed")
        }
        token.append(UInt8(ascii: "."))
        Base64URL.append(signature, to: &token)
        return String(decoding: token, as: UTF8.self)
    }
}
