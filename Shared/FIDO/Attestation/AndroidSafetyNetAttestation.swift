import Crypto
import FoundationEssentials
import Tokens
import JSON

/// The `android-safetynet` attestation statement format (WebAuthn L3 §8.5): a SafetyNet
/// Attestation API response, a JWS signed by Google's `attest.android.com` certificate.
///
/// Syntax: `{ ver: text, response: bytes }`, `response` being the UTF-8 compact JWS.
///
/// The JWS is verified with the public key of the leaf certificate of its own `x5c` header,
/// under the one algorithm that key fixes (RS256 for RSA, ES256/384/512 for EC), never the
/// header's `alg`; the certificates are returned as trust path for the trust evaluator to
/// chain to the Google roots. Checks beyond §8.5 that the SafetyNet documentation requires:
/// the leaf is issued to `attest.android.com`; `ctsProfileMatch` is true (unless
/// ``requiresCTSProfileMatch`` is false) and `basicIntegrity` is true; `timestampMs` is within
/// ``timestampTolerance`` of the verification time (unless ``checksTimestamp`` is false).
///
/// - Note: Google has deprecated SafetyNet for the Play Integrity API; this verifier exists for
///   authenticators registered with it.
public struct AndroidSafetyNetAttestation: AttestationFormatVerifier {
    public let format = "android-safetynet"

    /// Refuse responses whose `ctsProfileMatch` is false (a device that fails Android
    /// compatibility testing: rooted, modified or uncertified). Default true.
    public var requiresCTSProfileMatch: Bool
    /// Check `timestampMs` against the verification time. Default true.
    public var checksTimestamp: Bool
    /// How far `timestampMs` may be from the verification time, either way. Default 60 s.
    public var timestampTolerance: TimeInterval

    /// The hostname the leaf certificate must be issued to.
    public static let attestationHostname = "attest.android.com"
    /// Largest `response` accepted: real responses with their certificate chain are ~8 KiB.
    public static let maximumResponseLength = 32 * 1024

    public init(requiresCTSProfileMatch: Bool = true, checksTimestamp: Bool = true, timestampTolerance: TimeInterval = 60) {
        self.requiresCTSProfileMatch = requiresCTSProfileMatch
        self.checksTimestamp = checksTimestamp
        self.timestampTolerance = timestampTolerance
    }

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // Step 1: attStmt is valid CBOR conforming to the syntax; extract its fields.
        let fields = try AttestationStatementFields(context.statement, allowed: ["ver", "response"], step: "§8.5 step 1")
        let version = try fields.text("ver")
        let response = try fields.bytes("response")
        guard !version.isEmpty else { throw WebAuthnError(.attestationInvalid, step: "§8.5 step 1", "ver must not be empty") }
        guard response.count <= Self.maximumResponseLength, let compact = String(validating: response, as: UTF8.self) else {
            throw WebAuthnError(.attestationInvalid, step: "§8.5 step 1", "response must be a UTF-8 JWS of at most 32 KiB")
        }
        let jws: JWS
        do {
            jws = try JWS(compact: compact, limits: JWS.Limits(maximumLength: Self.maximumResponseLength, maximumHeaderLength: 24 * 1024))
        } catch {
            throw WebAuthnError(.attestationInvalid, step: "§8.5 step 1", "response is not a compact JWS (\(error.code))")
        }

        // Step 3 (first, because step 2 reads the payload only once it is authentic): the
        // response came from the SafetyNet service — the JWS verifies with the key of the
        // attest.android.com certificate of its x5c header.
        let x5c = try Self.certificates(jws.header)
        let leaf = x5c[0]
        try Self.checkHostname(leaf)
        let key = try Self.verificationKey(leaf)
        do {
            try jws.verify(with: key)
        } catch {
            if error.code == .algorithmMismatch {
                throw WebAuthnError(.attestationAlgorithmMismatch, step: "§8.5 step 3", "the JWS alg is not the algorithm of the leaf key")
            }
            throw WebAuthnError(.attestationSignatureInvalid, step: "§8.5 step 3", "the SafetyNet JWS signature does not verify")
        }
        let payload = try Self.payload(jws.payload)

        // Step 2: nonce is base64(SHA-256(authenticatorData ‖ clientDataHash)) (standard
        // base64 with padding, as SafetyNet encodes it).
        let expectedNonce = Data(SHA256.hash(context.signedData)).base64EncodedString()
        guard case .string(let nonce)? = payload["nonce"] else {
            throw WebAuthnError(.attestationInvalid, step: "§8.5 step 2", "the SafetyNet payload has no nonce string")
        }
        guard ConstantTime.equals(Array(nonce.utf8), Array(expectedNonce.utf8)) else {
            throw WebAuthnError(.nonceMismatch, step: "§8.5 step 2", "nonce is not base64(SHA-256(authenticatorData ‖ clientDataHash))")
        }

        // Step 3, continued (SafetyNet documentation): the device verdict and the timestamp.
        guard case .bool(let basicIntegrity)? = payload["basicIntegrity"], case .bool(let ctsProfileMatch)? = payload["ctsProfileMatch"]
        else {
            throw WebAuthnError(.attestationInvalid, step: "§8.5 step 3", "basicIntegrity and ctsProfileMatch must be booleans")
        }
        guard basicIntegrity else {
            throw WebAuthnError(.integrityVerdict, step: "§8.5 step 3", "SafetyNet basicIntegrity is false")
        }
        if requiresCTSProfileMatch, !ctsProfileMatch {
            throw WebAuthnError(.integrityVerdict, step: "§8.5 step 3", "SafetyNet ctsProfileMatch is false")
        }
        if checksTimestamp {
            guard case .int(let milliseconds)? = payload["timestampMs"] else {
                throw WebAuthnError(.attestationInvalid, step: "§8.5 step 3", "timestampMs must be an integer")
            }
            let issued = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
            guard abs(issued.timeIntervalSince(context.verificationTime)) <= timestampTolerance else {
                throw WebAuthnError(.timestampOutOfWindow, step: "§8.5 step 3", "timestampMs is outside the accepted window")
            }
        }

        // Step 4: Basic, trust path x5c.
        return AttestationResult(type: .basic, trustPath: x5c.map(\.derEncoded))
    }

    /// The JWS header's `x5c`: standard base64 DER certificates, leaf first (RFC 7515 §4.1.6).
    private static func certificates(_ header: JWSHeader) throws(WebAuthnError) -> [X509Certificate] {
        let step = "§8.5 step 3"
        guard case .array(let entries)? = header.additionalParameters["x5c"], !entries.isEmpty,
            entries.count <= AttestationStatementFields.maximumChainLength
        else { throw WebAuthnError(.attestationInvalid, step: step, "the JWS header must carry an x5c of 1–8 certificates") }
        var chain: [[UInt8]] = []
        for entry in entries {
            guard case .string(let text) = entry, let der = Data(base64Encoded: text) else {
                throw WebAuthnError(.attestationInvalid, step: step, "x5c entries must be base64 strings")
            }
            chain.append(Array(der))
        }
        return try AttestationStatementFields.certificates(chain, step: step)
    }

    /// The leaf is issued to attest.android.com: its DNS names when it has a subjectAltName
    /// with any (RFC 6125 §6.4.4), its subject CN otherwise.
    private static func checkHostname(_ leaf: X509Certificate) throws(WebAuthnError) {
        let dnsNames = (leaf.subjectAlternativeNames ?? []).compactMap { name -> String? in
            if case .dns(let host) = name { return host }
            return nil
        }
        let issuedTo = dnsNames.isEmpty ? leaf.subject.values(forOID: X509OID.commonName) : dnsNames
        guard issuedTo.contains(where: { $0.lowercased() == attestationHostname }) else {
            throw WebAuthnError(.certificateRequirements, step: "§8.5 step 3", "the leaf certificate is not issued to attest.android.com")
        }
    }

    /// The leaf key bound to the one algorithm its type fixes.
    private static func verificationKey(_ leaf: X509Certificate) throws(WebAuthnError) -> JWSVerificationKey {
        let step = "§8.5 step 3"
        let publicKey = try AttestationChecks.publicKey(of: leaf, step: step)
        let algorithm: JWSAlgorithm
        switch publicKey.kind {
        case .rsa: algorithm = .rs256  // what SafetyNet signs with; PKCS#1 v1.5 only, no PSS
        case .ec(.p256): algorithm = .es256
        case .ec(.p384): algorithm = .es384
        case .ec(.p521): algorithm = .es512
        case .ec(.secp256k1): throw WebAuthnError(.certificateRequirements, step: step, "a secp256k1 leaf key cannot verify a SafetyNet JWS")
        case .ed25519: algorithm = .edDSA
        case .ed448: throw WebAuthnError(.certificateRequirements, step: step, "an Ed448 leaf key cannot verify a SafetyNet JWS")
        }
        do {
            return try JWSVerificationKey(publicKey: publicKey, algorithm: algorithm)
        } catch {
            throw WebAuthnError(.certificateRequirements, step: step, "the leaf key cannot verify a JWS (\(error.code))")
        }
    }

    /// The payload: one JSON object.
    private static func payload(_ bytes: [UInt8]) throws(WebAuthnError) -> JSONValue {
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes, allowingByteOrderMark: true)
        } catch {
            throw WebAuthnError(.attestationInvalid, step: "§8.5 step 2", "the SafetyNet payload is not JSON (\(error.reason))")
        }
        guard case .object = json else { throw WebAuthnError(.attestationInvalid, step: "§8.5 step 2", "the SafetyNet payload is not an object") }
        return json
    }
}
