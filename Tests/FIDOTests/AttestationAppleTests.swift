import Crypto
import FIDO
import Foundation
import Testing

/// `apple` anonymous attestation (WebAuthn L3 §8.8): one rule broken at a time.
@Suite struct AttestationAppleTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued
    let intermediate: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root("Signet Apple Test Root")
        intermediate = try PKI.intermediate("Signet Apple Test CA 1", by: root)
    }

    /// credCert for the credential key with `extensions` (by default the right nonce).
    func credCert(key: PrivateKey? = nil, extensions: [PKI.Extension]? = nil) throws -> PKI.Issued {
        try PKI.leaf(
            subject: [(X509OID.commonName, "credential")], by: intermediate, key: key ?? fixture.authenticator.key,
            extensions: extensions ?? [PKI.basicConstraints(ca: false), PKI.appleNonce(SHA256.hash(fixture.signedData))])
    }

    func failure(_ credCert: PKI.Issued) throws -> WebAuthnError? {
        let context = try fixture.context(format: "apple", statement: PKI.statement([("x5c", PKI.x5c([credCert, intermediate]))]))
        return attestationError { _ = try AppleAttestation().verify(context) }
    }

    @Test func anonymousAttestationVerifies() throws {
        let cert = try credCert()
        let statement = PKI.statement([("x5c", PKI.x5c([cert, intermediate]))])
        let result = try AppleAttestation().verify(try fixture.context(format: "apple", statement: statement))
        #expect(result.type == .anonCA)
        #expect(result.trustPath == [cert.der, intermediate.der])

        // And through registration, chained to the root.
        let anchor = try root.certificate
        let verifier = fixture.verifier(evaluator: TrustAnchorEvaluator { _, format in format == "apple" ? [anchor] : [] })
        let registered = try verifier.verify(
            fixture.response(format: "apple", statement: statement), expectedChallenge: fixture.challenge,
            verificationTime: PKI.verificationTime)
        #expect(registered.attestationType == .anonCA)
    }

    @Test func statementWithSignatureIsRefused() throws {
        let statement = PKI.statement([("x5c", PKI.x5c([try credCert(), intermediate])), ("sig", .bytes([1]))])
        let context = try fixture.context(format: "apple", statement: statement)
        let error = attestationError { _ = try AppleAttestation().verify(context) }
        #expect(error?.code == .attestationInvalid)
    }

    @Test func nonceForAnotherCeremonyIsRefused() throws {
        let other = SHA256.hash(fixture.authData)
        let error = try failure(try credCert(extensions: [PKI.basicConstraints(ca: false), PKI.appleNonce(other)]))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    @Test func missingNonceExtensionIsRefused() throws {
        let error = try failure(try credCert(extensions: [PKI.basicConstraints(ca: false)]))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func malformedNonceExtensionIsRefused() throws {
        // [2] instead of [1].
        let bad = PKI.Extension(
            oid: X509OID.appleNonce, value: PKI.seq([DER.tlv(0xA2, PKI.octetString(SHA256.hash(fixture.signedData)))]))
        let error = try failure(try credCert(extensions: [PKI.basicConstraints(ca: false), bad]))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func certificateForAnotherKeyIsRefused() throws {
        let error = try failure(try credCert(key: try PrivateKey.generateP256()))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .publicKeyMismatch)
    }
}
