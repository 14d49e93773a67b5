import Crypto
import FIDO
import Foundation

/// Verified registrations for policy tests, produced by the real ``RegistrationVerifier`` from
/// responses built here: `none` and packed self attestation as authenticators send them, and a
/// test-only format for attestation types that need certificate chains.
enum PolicyTestRegistrations {
    static let rpID = "example.org"
    static let origin = "https://example.org"
    static let up: UInt8 = 0x01
    static let uv: UInt8 = 0x04

    enum Attestation {
        case none
        case selfSigned
        /// Any type and trust path, through ``TestFormat``.
        case chain(AttestationType, [[UInt8]])
    }

    /// Returns the result it was given: the chain itself is the trust evaluator's business,
    /// which ``AcceptingEvaluator`` stands in for.
    struct TestFormat: AttestationFormatVerifier {
        let format = "signet-policy-test"
        let type: AttestationType
        let trustPath: [[UInt8]]
        func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
            AttestationResult(type: type, trustPath: trustPath)
        }
    }

    struct AcceptingEvaluator: AttestationTrustEvaluator {
        func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError) {}
    }

    static func registration(
        aaguid: AAGUID = AAGUID("cb69481e-8ff7-4039-93ec-0a2729a154a8")!, flags: UInt8 = up | uv, attestation: Attestation = .none
    ) throws -> VerifiedRegistration {
        let key = try PrivateKey.generateP256()
        let spki = try key.publicKey().subjectPublicKeyInfo
        let cose = CBORValue.map([
            (key: .int(1), value: .int(2)), (key: .int(3), value: .int(-7)), (key: .int(-1), value: .int(1)),
            (key: .int(-2), value: .bytes(Array(spki[27..<59]))), (key: .int(-3), value: .bytes(Array(spki[59..<91]))),
        ]).encoded
        let credentialID = Array(SecureRandom.bytes(16))
        var authData = SHA256.hash(Array(rpID.utf8))
        authData.append(flags | 0x40)
        authData += [0, 0, 0, 1]
        authData += aaguid.bytes
        authData += [0, UInt8(credentialID.count)] + credentialID + cose

        let challenge = SecureRandom.bytes(32)
        let clientData = Array(
            #"{"type":"webauthn.create","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)","crossOrigin":false}"#.utf8)

        var formats = AttestationFormatRegistry.standard
        let fmt: String
        let statement: CBORValue
        switch attestation {
        case .none:
            fmt = "none"
            statement = .map([])
        case .selfSigned:
            fmt = "packed"
            let sig = try key.sign(authData + SHA256.hash(clientData), algorithm: .es256)
            statement = .map([(key: .text("alg"), value: .int(-7)), (key: .text("sig"), value: .bytes(sig))])
        case .chain(let type, let path):
            let test = TestFormat(type: type, trustPath: path)
            formats.register(test)
            fmt = test.format
            statement = .map([])
        }
        let attestationObject = CBORValue.map([
            (key: .text("fmt"), value: .text(fmt)), (key: .text("attStmt"), value: statement), (key: .text("authData"), value: .bytes(authData)),
        ]).encoded

        let verifier = RegistrationVerifier(
            relyingParty: RelyingParty(id: rpID, origins: [origin]), requiresUserVerification: false, attestationFormats: formats,
            trustEvaluator: AcceptingEvaluator())
        return try verifier.verify(
            RegistrationResponse(clientDataJSON: clientData, attestationObject: attestationObject), expectedChallenge: challenge)
    }
}
