import Crypto
import FIDO
import Foundation
import JSON
import Schema

/// A software FIDO UAF authenticator (with the bits of a UAF client and ASM it needs) for
/// tests: it answers RegistrationRequest and AuthenticationRequest messages with UAFV1TLV
/// assertions, as Authenticator Commands §6.2 and §6.3 build them.
///
/// Attestation is basic full (a leaf certificate issued by a test attestation CA) or basic
/// surrogate (the new key signs its own KRD). Keys are P-256 (signatures raw r‖s,
/// `UAF_ALG_SIGN_SECP256R1_ECDSA_SHA256_RAW`, or DER), secp256k1 (raw or DER), P-384 and
/// P-521 (raw), RSA-2048 with PSS or PKCS #1 v1.5, or Ed25519.
public final class SoftUAFAuthenticator: @unchecked Sendable {
    // @unchecked Sendable: tests drive one authenticator from one task at a time.

    public enum Attestation {
        case surrogate
        /// Basic full: the attestation key and its certificate chain (leaf first).
        case full(key: PrivateKey, certificates: [[UInt8]])
    }

    public struct Registration {
        public let keyID: [UInt8]
        public let key: PrivateKey
        public var signCounter: UInt32
    }

    public let aaid: String
    public let attestation: Attestation
    public let algorithm: UAFSignatureAlgorithm
    public let keyEncoding: UAFKeyEncoding
    /// The facet the client claims (must be in the tenant's TrustedFacets).
    public var facetID: String
    /// The TLS channel binding the client puts into FinalChallengeParams (none by default).
    public var channelBinding = UAFChannelBinding()
    /// Whether counters are kept (false: both counters stay 0).
    public var keepsCounters = true
    /// The transaction display's PNG characteristics, when it shows images: of a request's
    /// transaction forms it shows (and signs) the `image/png` one with these characteristics,
    /// as a client picks the form its authenticator's metadata lists; otherwise the first form.
    public var display: UAFDisplayPNGCharacteristics?
    public private(set) var registrations: [Registration] = []
    private var regCounter: UInt32 = 0
    private let makeKey: () throws -> PrivateKey

    /// - Parameters:
    ///   - rsaKeyPEM: for RSA and Ed25519 algorithms, the PEM of the (test) key to use for every
    ///     registration.
    public init(
        aaid: String = "FFFF#0001", attestation: Attestation = .surrogate, algorithm: UAFSignatureAlgorithm = .secp256r1ECDSASHA256Raw,
        keyEncoding: UAFKeyEncoding = .eccX962Raw, facetID: String = "https://example.test", rsaKeyPEM: String? = nil
    ) {
        self.aaid = aaid
        self.attestation = attestation
        self.algorithm = algorithm
        self.keyEncoding = keyEncoding
        self.facetID = facetID
        if let rsaKeyPEM {
            makeKey = { try PrivateKey.fromPEM(rsaKeyPEM) }
        } else {
            let curve: Curve =
                switch algorithm.rawValue {
                case 0x0010: .p384
                case 0x0011: .p521
                case 0x0005, 0x0006: .secp256k1
                default: .p256
                }
            makeKey = { try PrivateKey.generateEC(curve) }
        }
    }

    // MARK: - Messages

    /// The fcParams a client would build for `header`'s AppID and `challenge`.
    public func fcParams(appID: String, challenge: String) throws -> String {
        let params = UAFFinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID, channelBinding: channelBinding)
        return Base64URL.encode(try JSONValueEncoder().encodeToBytes(params))
    }

    /// Answers a RegistrationRequest: the `uafResponse` JSON text (an array of one message).
    public func register(_ request: UAFRegistrationRequest, appID: String? = nil, mutate: ((inout UAFResponse) -> Void)? = nil) throws -> String {
        let fc = try fcParams(appID: appID ?? request.header.appID ?? "", challenge: request.challenge)
        let assertion = try registrationAssertion(fcParams: fc)
        var response = UAFResponse(
            header: UAFOperationHeader(upv: request.header.upv, op: "Reg", appID: request.header.appID, serverData: request.header.serverData),
            fcParams: fc, assertions: [UAFAssertionMessage(assertion: Base64URL.encode(assertion))])
        mutate?(&response)
        return String(decoding: try JSONValueEncoder().encodeToBytes([response]), as: UTF8.self)
    }

    /// Answers an AuthenticationRequest with the newest registration (or `keyID`'s).
    public func authenticate(
        _ request: UAFAuthenticationRequest, keyID: [UInt8]? = nil, appID: String? = nil, mode: UInt8? = nil,
        transactionContent: [UInt8]? = nil, mutate: ((inout UAFResponse) -> Void)? = nil
    ) throws -> String {
        let fc = try fcParams(appID: appID ?? request.header.appID ?? "", challenge: request.challenge)
        let forms = request.transaction ?? []
        let form = display.flatMap { d in forms.first { $0.contentType == "image/png" && $0.tcDisplayPNGCharacteristics == d } } ?? forms.first
        let content = transactionContent ?? form.flatMap { Base64URL.decode($0.content) }
        let assertion = try authenticationAssertion(fcParams: fc, keyID: keyID, transactionContent: content, mode: mode)
        var response = UAFResponse(
            header: UAFOperationHeader(upv: request.header.upv, op: "Auth", appID: request.header.appID, serverData: request.header.serverData),
            fcParams: fc, assertions: [UAFAssertionMessage(assertion: Base64URL.encode(assertion))])
        mutate?(&response)
        return String(decoding: try JSONValueEncoder().encodeToBytes([response]), as: UTF8.self)
    }

    // MARK: - TLV assertions

    private static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    private func hash(_ data: [UInt8]) -> [UInt8] { algorithm.hash(data) ?? [] }

    private func encodePublicKey(_ key: PrivateKey) throws -> [UInt8] {
        let spki = try key.publicKey().subjectPublicKeyInfo
        switch keyEncoding {
        case .eccX962Raw:
            // The uncompressed point ends the SPKI: 04 ‖ X ‖ Y.
            guard case .ec(let curve) = key.kind else { throw CryptoError("SoftUAFAuthenticator: not an EC key") }
            return Array(spki.suffix(1 + 2 * curve.coordinateSize))
        case .cose where algorithm == .ed25519EdDSASHA512Raw:
            // COSE_Key {1: 1 (OKP), 3: -8 (EdDSA), -1: 6 (Ed25519), -2: x}.
            return [0xA4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21, 0x58, 0x20] + Array(spki.suffix(32))
        case .rsa2048Raw:
            // The modulus and exponent, read back out of the SPKI (RSAPublicKey inside a BIT STRING).
            let inner = Array(spki.suffix(270))  // 30 82 01 0a 02 82 01 01 00 <256> 02 03 <3>
            let modulus = Array(inner[9..<265])
            let exponent = Array(inner[267...])
            return modulus + [UInt8](repeating: 0, count: 4 - exponent.count) + exponent
        default: return spki
        }
    }

    private func sign(_ key: PrivateKey, _ message: [UInt8]) throws -> [UInt8] {
        switch algorithm {
        case .secp256r1ECDSASHA256Raw:
            let der = try key.sign(message, algorithm: .es256)
            guard let raw = ECDSASignature.raw(fromDER: der, size: 32) else { throw CryptoError("raw") }
            return raw
        case .secp256r1ECDSASHA256DER: return try key.sign(message, algorithm: .es256)
        case .secp256k1ECDSASHA256Raw:
            guard let raw = ECDSASignature.raw(fromDER: try key.sign(message, algorithm: .es256k), size: 32) else { throw CryptoError("raw") }
            return raw
        case .secp256k1ECDSASHA256DER: return try key.sign(message, algorithm: .es256k)
        case .secp384r1ECDSASHA384Raw:
            guard let raw = ECDSASignature.raw(fromDER: try key.sign(message, algorithm: .es384), size: 48) else { throw CryptoError("raw") }
            return raw
        case .secp521r1ECDSASHA512Raw:
            guard let raw = ECDSASignature.raw(fromDER: try key.sign(message, algorithm: .es512), size: 66) else { throw CryptoError("raw") }
            return raw
        case .rsassaPSSSHA256Raw: return try key.sign(message, algorithm: .ps256)
        case .rsassaPSSSHA256DER: return DER.tlv(0x04, try key.sign(message, algorithm: .ps256))
        case .rsaEMSAPKCS1SHA256Raw, .rsassaPKCSv15SHA256Raw: return try key.sign(message, algorithm: .rs256)
        case .rsaEMSAPKCS1SHA256DER: return DER.tlv(0x04, try key.sign(message, algorithm: .rs256))
        case .ed25519EdDSASHA512Raw: return try key.sign(message, algorithm: .ed25519)
        default: throw CryptoError("SoftUAFAuthenticator: algorithm not implemented")
        }
    }

    /// A TAG_UAFV1_REG_ASSERTION for `fcParams`, registering a new key.
    public func registrationAssertion(fcParams: String, extensions: [UAFExtension] = []) throws -> [UInt8] {
        let key = try makeKey()
        let keyID = SecureRandom.bytes(32)
        if keepsCounters { regCounter += 1 }
        let krd = UAFTLV(.krd, children: [
            UAFTLV(.aaid, Array(aaid.utf8)),
            UAFTLV(.assertionInfo, Self.u16(1) + [0x01] + Self.u16(algorithm.rawValue) + Self.u16(keyEncoding.rawValue)),
            UAFTLV(.finalChallengeHash, hash(Array(fcParams.utf8))),
            UAFTLV(.keyID, keyID),
            UAFTLV(.counters, Self.u32(0) + Self.u32(regCounter)),
            UAFTLV(.publicKey, try encodePublicKey(key)),
        ] + extensions.map(\.tlv))
        let attestationTLV: UAFTLV
        switch attestation {
        case .surrogate:
            attestationTLV = UAFTLV(.attestationBasicSurrogate, children: [UAFTLV(.signature, try sign(key, krd.encoded))])
        case .full(let attestationKey, let certificates):
            attestationTLV = UAFTLV(
                .attestationBasicFull,
                children: [UAFTLV(.signature, try sign(attestationKey, krd.encoded))] + certificates.map { UAFTLV(.attestationCert, $0) })
        }
        registrations.append(Registration(keyID: keyID, key: key, signCounter: 0))
        return UAFTLV(.regAssertion, children: [krd, attestationTLV]).encoded
    }

    /// A TAG_UAFV1_AUTH_ASSERTION for `fcParams` with a registered key.
    public func authenticationAssertion(fcParams: String, keyID: [UInt8]? = nil, transactionContent: [UInt8]? = nil, mode: UInt8? = nil) throws -> [UInt8] {
        guard let index = keyID.map({ id in registrations.firstIndex { $0.keyID == id } }) ?? registrations.indices.last else {
            throw CryptoError("SoftUAFAuthenticator: no registration")
        }
        if keepsCounters { registrations[index].signCounter += 1 }
        let registration = registrations[index]
        let signed = UAFTLV(.signedData, children: [
            UAFTLV(.aaid, Array(aaid.utf8)),
            UAFTLV(.assertionInfo, Self.u16(1) + [mode ?? (transactionContent == nil ? 0x01 : 0x02)] + Self.u16(algorithm.rawValue)),
            UAFTLV(.authenticatorNonce, SecureRandom.bytes(16)),
            UAFTLV(.finalChallengeHash, hash(Array(fcParams.utf8))),
            UAFTLV(.transactionContentHash, transactionContent.map(hash) ?? []),
            UAFTLV(.keyID, registration.keyID),
            UAFTLV(.counters, Self.u32(registration.signCounter)),
        ])
        return UAFTLV(.authAssertion, children: [signed, UAFTLV(.signature, try sign(registration.key, signed.encoded))]).encoded
    }

    /// Sets a registration's counter back (a cloned authenticator's view).
    public func rewindCounter(to value: UInt32) {
        guard !registrations.isEmpty else { return }
        registrations[registrations.count - 1].signCounter = value
    }
}
