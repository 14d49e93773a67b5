import Crypto
import FIDO
import Foundation
import Testing

/// `android-key` (WebAuthn L3 §8.4): one rule broken at a time.
@Suite struct AttestationAndroidKeyTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root("Signet Android Test Root")
    }

    /// A keystore certificate for the credential key (or `key`) with a KeyDescription.
    func credCert(
        key: PrivateKey? = nil, challenge: [UInt8]? = nil, software: [PKI.Authorization] = [],
        tee: [PKI.Authorization] = PKI.teeGeneratedSigningKey, keyDescription: PKI.Extension? = nil, omitKeyDescription: Bool = false
    ) throws -> PKI.Issued {
        let description = keyDescription ?? PKI.keyDescription(challenge: challenge ?? fixture.clientDataHash, software: software, tee: tee)
        return try PKI.leaf(
            subject: [(X509OID.commonName, "Android Keystore Key")], by: root, key: key ?? fixture.authenticator.key,
            extensions: omitKeyDescription ? [] : [description])
    }

    func statement(_ cert: PKI.Issued, alg: Int = -7, signedData: [UInt8]? = nil) throws -> CBORValue {
        let sig = try cert.key.sign(signedData ?? fixture.signedData, algorithm: .es256)
        return PKI.statement([("alg", .int(alg)), ("sig", .bytes(sig)), ("x5c", PKI.x5c([cert]))])
    }

    func failure(_ statement: CBORValue, verifier: AndroidKeyAttestation = AndroidKeyAttestation()) throws -> WebAuthnError? {
        let context = try fixture.context(format: "android-key", statement: statement)
        return attestationError { _ = try verifier.verify(context) }
    }

    @Test func androidKeyAttestationVerifies() throws {
        let cert = try credCert()
        let statement = try statement(cert)
        let result = try AndroidKeyAttestation().verify(try fixture.context(format: "android-key", statement: statement))
        #expect(result.type == .basic)
        #expect(result.trustPath == [cert.der])

        let anchor = try root.certificate
        let verifier = fixture.verifier(evaluator: TrustAnchorEvaluator { _, _ in [anchor] })
        let registered = try verifier.verify(
            fixture.response(format: "android-key", statement: statement), expectedChallenge: fixture.challenge,
            verificationTime: PKI.verificationTime)
        #expect(registered.attestationType == .basic)
    }

    // MARK: - Steps 1–3

    @Test func missingX5CIsRefused() throws {
        let sig = try fixture.authenticator.key.sign(fixture.signedData, algorithm: .es256)
        let error = try failure(PKI.statement([("alg", .int(-7)), ("sig", .bytes(sig))]))
        #expect(error?.code == .attestationInvalid)
    }

    @Test func algThatDoesNotFitTheKeyIsRefused() throws {
        let error = try failure(try statement(try credCert(), alg: -8))
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    @Test func signatureOverOtherDataIsRefused() throws {
        let error = try failure(try statement(try credCert(), signedData: fixture.authData))
        #expect(error?.code == .attestationSignatureInvalid)
    }

    @Test func certificateForAnotherKeyIsRefused() throws {
        // Signed consistently by another key: only the key comparison can catch it.
        let error = try failure(try statement(try credCert(key: try PrivateKey.generateP256())))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .publicKeyMismatch)
    }

    // MARK: - Step 4

    @Test func attestationChallengeForAnotherCeremonyIsRefused() throws {
        let error = try failure(try statement(try credCert(challenge: Array(repeating: 0x42, count: 32))))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    @Test func missingKeyDescriptionIsRefused() throws {
        let error = try failure(try statement(try credCert(omitKeyDescription: true)))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func malformedKeyDescriptionIsRefused() throws {
        // An INTEGER where the SEQUENCE should be.
        let bad = PKI.Extension(oid: X509OID.androidKeyDescription, value: PKI.integer(3))
        let error = try failure(try statement(try credCert(keyDescription: bad)))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func repeatedAuthorizationTagIsRefused() throws {
        let error = try failure(try statement(try credCert(tee: [.purposes([2]), .origin(0), .origin(0)])))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    // MARK: - Step 5

    @Test func emptyAuthorizationListsAreRefused() throws {
        let error = try failure(try statement(try credCert(tee: [])))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .keyAuthorizations)
    }

    @Test(arguments: [true, false])
    func allApplicationsIsRefused(inTEE: Bool) throws {
        let cert =
            inTEE
            ? try credCert(tee: PKI.teeGeneratedSigningKey + [.allApplications])
            : try credCert(software: [.allApplications], tee: PKI.teeGeneratedSigningKey)
        let error = try failure(try statement(cert))
        #expect(error?.attestationFailure == .keyAuthorizations)
        // Even when software-only keys are accepted.
        let relaxed = try failure(try statement(cert), verifier: AndroidKeyAttestation(requiresTrustedEnvironment: false))
        #expect(relaxed?.attestationFailure == .keyAuthorizations)
    }

    @Test func importedKeyIsRefused() throws {
        // KM_ORIGIN_IMPORTED (2).
        let error = try failure(try statement(try credCert(tee: [.purposes([2]), .origin(2)])))
        #expect(error?.attestationFailure == .keyAuthorizations)
    }

    @Test func keyWithoutSignPurposeIsRefused() throws {
        // KM_PURPOSE_ENCRYPT (0) and DECRYPT (1) only.
        let error = try failure(try statement(try credCert(tee: [.purposes([0, 1]), .origin(0)])))
        #expect(error?.attestationFailure == .keyAuthorizations)
    }

    @Test func softwareOnlyKeyNeedsPolicy() throws {
        let cert = try credCert(software: PKI.teeGeneratedSigningKey, tee: [])
        let strict = try failure(try statement(cert))
        #expect(strict?.attestationFailure == .keyAuthorizations)
        #expect(try failure(try statement(cert), verifier: AndroidKeyAttestation(requiresTrustedEnvironment: false)) == nil)
    }

    @Test func softwareListCannotOverrideTheTEE() throws {
        // With the union allowed, an imported key in the TEE list still fails even if the
        // software list claims "generated".
        let cert = try credCert(software: [.origin(0)], tee: [.purposes([2]), .origin(2)])
        let error = try failure(try statement(cert), verifier: AndroidKeyAttestation(requiresTrustedEnvironment: false))
        #expect(error?.attestationFailure == .keyAuthorizations)
    }
}
