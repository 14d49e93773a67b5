import Crypto
import FIDO
import Foundation
import Testing

/// `packed` with x5c (WebAuthn L3 §8.2 step 2, §8.2.1): one rule broken at a time.
@Suite struct AttestationPackedTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root()
    }

    /// A packed statement signed by `leaf` over authData ‖ clientDataHash.
    func statement(
        leaf: PKI.Issued, alg: Int = -7, signedData: [UInt8]? = nil, x5c: CBORValue? = nil, extra: [(String, CBORValue)] = []
    ) throws -> CBORValue {
        let sig = try leaf.key.sign(signedData ?? fixture.signedData, algorithm: .es256)
        return PKI.statement([("alg", .int(alg)), ("sig", .bytes(sig)), ("x5c", x5c ?? PKI.x5c([leaf]))] + extra)
    }

    func verify(_ statement: CBORValue) throws -> AttestationResult {
        try PackedAttestation().verify(try fixture.context(format: "packed", statement: statement))
    }

    func failure(_ statement: CBORValue) throws -> WebAuthnError? {
        let context = try fixture.context(format: "packed", statement: statement)
        return attestationError { _ = try PackedAttestation().verify(context) }
    }

    func leaf(
        subject: [(String, String)] = PKI.packedSubject, version: Int = 3, extensions: [PKI.Extension]? = nil
    ) throws -> PKI.Issued {
        try PKI.leaf(
            subject: subject, by: root, version: version,
            extensions: extensions ?? [PKI.basicConstraints(ca: false), PKI.aaguid(fixture.aaguid)])
    }

    // MARK: - Success

    @Test func basicAttestationVerifies() throws {
        let leaf = try leaf()
        let result = try verify(try statement(leaf: leaf))
        #expect(result.type == .basic)
        #expect(result.trustPath == [leaf.der])
    }

    @Test func withoutAAGUIDExtensionVerifies() throws {
        let result = try verify(try statement(leaf: try leaf(extensions: [PKI.basicConstraints(ca: false)])))
        #expect(result.type == .basic)
    }

    /// Registration end to end: the trust path chains to the configured root.
    @Test func registrationWithTrustedRootVerifies() throws {
        let leaf = try leaf()
        let root = try self.root.certificate
        let verifier = fixture.verifier(evaluator: TrustAnchorEvaluator(source: ConfiguredTrustAnchors(byFormat: ["packed": [root]])))
        let result = try verifier.verify(
            fixture.response(format: "packed", statement: try statement(leaf: leaf)), expectedChallenge: fixture.challenge,
            verificationTime: PKI.verificationTime)
        #expect(result.attestationType == .basic)
        #expect(result.attestationTrustPath == [leaf.der])
    }

    // MARK: - Step 1: syntax

    @Test func unknownMemberIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(), extra: [("ecdaaKeyId", .bytes([1]))]))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == nil)
    }

    @Test func emptyX5CIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(), x5c: .array([])))
        #expect(error?.code == .attestationInvalid)
    }

    @Test func x5cEntryThatIsNotACertificateIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(), x5c: .array([.bytes([0x30, 0x03, 0x02, 0x01, 0x01])])))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .certificateMalformed)
    }

    // MARK: - Step 2: signature

    @Test func algorithmThatDoesNotFitTheCertificateKeyIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(), alg: -257))
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    @Test func rsaAttestationKeyVerifiesWithRS256() throws {
        let rsa = try PrivateKey.fromPEM(PKI.rsaPEM)
        let leaf = try PKI.leaf(by: root, key: rsa)
        let sig = try rsa.sign(fixture.signedData, algorithm: .rs256)
        let result = try verify(PKI.statement([("alg", .int(-257)), ("sig", .bytes(sig)), ("x5c", PKI.x5c([leaf]))]))
        #expect(result.type == .basic)
    }

    /// RS1 (SHA-1) is for TPM attestation only; a packed statement may not use it even with an
    /// RSA key and a valid signature.
    @Test func sha1SignatureIsRefused() throws {
        let rsa = try PrivateKey.fromPEM(PKI.rsaPEM)
        let leaf = try PKI.leaf(by: root, key: rsa)
        let sig = try rsa.sign(fixture.signedData, algorithm: .rs1)
        let error = try failure(PKI.statement([("alg", .int(-65535)), ("sig", .bytes(sig)), ("x5c", PKI.x5c([leaf]))]))
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    @Test func signatureOverOtherDataIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(), signedData: fixture.authData))
        #expect(error?.code == .attestationSignatureInvalid)
    }

    // MARK: - §8.2.1 certificate requirements

    @Test func versionOneCertificateIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(version: 1)))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test(arguments: [
        ("C missing", [PKI.packedSubject[1], PKI.packedSubject[2], PKI.packedSubject[3]]),
        ("O missing", [PKI.packedSubject[0], PKI.packedSubject[2], PKI.packedSubject[3]]),
        ("OU wrong", [PKI.packedSubject[0], PKI.packedSubject[1], (X509OID.organizationalUnitName, "Security Key"), PKI.packedSubject[3]]),
        ("OU missing", [PKI.packedSubject[0], PKI.packedSubject[1], PKI.packedSubject[3]]),
        ("CN missing", [PKI.packedSubject[0], PKI.packedSubject[1], PKI.packedSubject[2]]),
        ("C not two letters", [(X509OID.countryName, "SWE"), PKI.packedSubject[1], PKI.packedSubject[2], PKI.packedSubject[3]]),
    ])
    func subjectOutsideTheRequirementsIsRefused(_ label: String, _ subject: [(String, String)]) throws {
        let error = try failure(try statement(leaf: try leaf(subject: subject)))
        #expect(error?.code == .attestationInvalid, "\(label)")
        #expect(error?.attestationFailure == .certificateRequirements, "\(label)")
    }

    @Test func caCertificateIsRefused() throws {
        let error = try failure(try statement(leaf: try leaf(extensions: [PKI.basicConstraints(ca: true)])))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func aaguidExtensionForAnotherAuthenticatorIsRefused() throws {
        let other = [UInt8](repeating: 0xB2, count: 16)
        let error = try failure(try statement(leaf: try leaf(extensions: [PKI.basicConstraints(ca: false), PKI.aaguid(other)])))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .aaguidMismatch)
    }

    @Test func criticalAAGUIDExtensionIsRefused() throws {
        let error = try failure(
            try statement(leaf: try leaf(extensions: [PKI.basicConstraints(ca: false), PKI.aaguid(fixture.aaguid, critical: true)])))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func malformedAAGUIDExtensionIsRefused() throws {
        let short = PKI.Extension(oid: X509OID.fidoAAGUID, value: PKI.octetString([1, 2, 3]))
        let error = try failure(try statement(leaf: try leaf(extensions: [PKI.basicConstraints(ca: false), short])))
        #expect(error?.attestationFailure == .certificateRequirements)
    }
}
