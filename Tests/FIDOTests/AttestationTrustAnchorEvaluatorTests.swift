import Crypto
import FIDO
import Foundation
import Testing

/// ``TrustAnchorEvaluator`` (WebAuthn L3 §7.1 steps 23–24): path validation against the anchors
/// chosen per format and AAGUID, and the precise refusals.
@Suite struct AttestationTrustAnchorEvaluatorTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued
    let intermediate: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root()
        intermediate = try PKI.intermediate("Signet Test Attestation CA", by: root)
    }

    /// A packed statement by a leaf under `intermediate` (x5c: leaf, intermediate).
    func packed(notAfter: String = "340101000000Z") throws -> (leaf: PKI.Issued, statement: CBORValue) {
        let leaf = try PKI.leaf(by: intermediate, extensions: [PKI.basicConstraints(ca: false), PKI.aaguid(fixture.aaguid)], notAfter: notAfter)
        let sig = try leaf.key.sign(fixture.signedData, algorithm: .es256)
        return (leaf, PKI.statement([("alg", .int(-7)), ("sig", .bytes(sig)), ("x5c", PKI.x5c([leaf, intermediate]))]))
    }

    func register(_ statement: CBORValue, _ evaluator: (any AttestationTrustEvaluator)?, time: Date = PKI.verificationTime) throws
        -> VerifiedRegistration
    {
        try fixture.verifier(evaluator: evaluator).verify(
            fixture.response(format: "packed", statement: statement), expectedChallenge: fixture.challenge, verificationTime: time)
    }

    func failure(_ statement: CBORValue, _ evaluator: (any AttestationTrustEvaluator)?, time: Date = PKI.verificationTime) -> WebAuthnError? {
        do {
            _ = try register(statement, evaluator, time: time)
            return nil
        } catch {
            return error as? WebAuthnError
        }
    }

    func evaluator(_ anchors: [PKI.Issued], intermediates: Bool = false) throws -> TrustAnchorEvaluator {
        let certificates = try anchors.map { try $0.certificate }
        return TrustAnchorEvaluator(source: ConfiguredTrustAnchors(byFormat: ["packed": certificates]), allowsIntermediateAnchors: intermediates)
    }

    @Test func chainToTheConfiguredRootVerifies() throws {
        let (leaf, statement) = try packed()
        let result = try register(statement, try evaluator([root]))
        #expect(result.attestationTrustPath == [leaf.der, intermediate.der])
    }

    @Test func anotherRootIsNotTrusted() throws {
        let error = failure(try packed().statement, try evaluator([try PKI.root("Unrelated Root")]))
        #expect(error?.code == .attestationNotTrusted)
        #expect(error?.attestationFailure == .chainRejected)
        #expect(error?.detail.contains("unable to get local issuer certificate") == true, "\(error?.detail ?? "")")
    }

    @Test func expiredAttestationCertificateIsNotTrusted() throws {
        let statement = try packed(notAfter: "250101000000Z").statement
        let error = failure(statement, try evaluator([root]))
        #expect(error?.attestationFailure == .chainRejected)
        #expect(error?.detail.contains("certificate has expired") == true, "\(error?.detail ?? "")")
        // The same chain verifies at a time inside its validity: the clock is the parameter.
        #expect(failure(statement, try evaluator([root]), time: Date(timeIntervalSince1970: 1_720_000_000)) == nil)
    }

    @Test func noAnchorsForTheFormatIsNotTrusted() throws {
        let certificate = try root.certificate
        let evaluator = TrustAnchorEvaluator(source: ConfiguredTrustAnchors(byFormat: ["tpm": [certificate]]))
        let error = failure(try packed().statement, evaluator)
        #expect(error?.code == .attestationNotTrusted)
        #expect(error?.attestationFailure == .noTrustAnchors)
    }

    @Test func intermediateAnchorNeedsPermission() throws {
        let statement = try packed().statement
        let refused = failure(statement, try evaluator([intermediate]))
        #expect(refused?.attestationFailure == .chainRejected)
        #expect(failure(statement, try evaluator([intermediate], intermediates: true)) == nil)
    }

    @Test func withoutAnEvaluatorAttestationIsNotTrusted() throws {
        let error = failure(try packed().statement, nil)
        #expect(error?.code == .attestationNotTrusted)
    }

    /// Anchors are looked up by the attested AAGUID and the format.
    @Test func lookupReceivesAAGUIDAndFormat() throws {
        let recorder = LookupRecorder()
        let anchor = try root.certificate
        let evaluator = TrustAnchorEvaluator { aaguid, format in
            recorder.record(aaguid, format)
            return [anchor]
        }
        _ = try register(try packed().statement, evaluator)
        #expect(recorder.calls.count == 1)
        #expect(recorder.calls.first?.aaguid?.bytes == fixture.aaguid)
        #expect(recorder.calls.first?.format == "packed")
    }

    @Test func anchorsByAAGUIDComeFirst() throws {
        let byModel = try root.certificate
        let byFormat = try PKI.root("Format Root").certificate
        let aaguid = try #require(AAGUID(bytes: fixture.aaguid))
        let source = ConfiguredTrustAnchors(byFormat: ["packed": [byFormat]], byAAGUID: [aaguid: [byModel]])
        #expect(source.anchors(for: aaguid, format: "packed") == [byModel, byFormat])
        #expect(source.anchors(for: nil, format: "packed") == [byFormat])
        #expect(source.anchors(for: nil, format: "tpm").isEmpty)
    }

    /// Where the AAGUID is not attested, anchors may come from the attestation certificate
    /// (MDS3 key identifiers); where it is, that lookup is not consulted.
    @Test func certificateLookupOnlyWithoutAttestedAAGUID() throws {
        struct ByCertificate: AttestationTrustAnchorSource {
            let anchor: X509Certificate
            func anchors(for aaguid: AAGUID?, format: String) -> [X509Certificate] { [] }
            func anchors(forAttestationCertificate certificate: X509Certificate) -> [X509Certificate] { [anchor] }
        }
        let evaluator = TrustAnchorEvaluator(source: ByCertificate(anchor: try root.certificate))
        // packed with a non-zero AAGUID: only the AAGUID lookup counts, and it has nothing.
        #expect(failure(try packed().statement, evaluator)?.attestationFailure == .noTrustAnchors)
        // The same chain with a zero AAGUID falls back to the certificate lookup.
        let zero = try PKI.Fixture(aaguid: Array(repeating: 0, count: 16))
        let leaf = try PKI.leaf(by: intermediate)
        let sig = try leaf.key.sign(zero.signedData, algorithm: .es256)
        let statement = PKI.statement([("alg", .int(-7)), ("sig", .bytes(sig)), ("x5c", PKI.x5c([leaf, intermediate]))])
        let result = try zero.verifier(evaluator: evaluator).verify(
            zero.response(format: "packed", statement: statement), expectedChallenge: zero.challenge, verificationTime: PKI.verificationTime)
        #expect(result.attestationType == .basic)
    }

    @Test func failureNamesRoundTrip() {
        for failure in AttestationFailure.allCases {
            let error = WebAuthnError(failure.code, step: "test", "\(failure.rawValue): detail")
            #expect(error.attestationFailure == failure)
        }
        #expect(WebAuthnError(.attestationInvalid, step: "test", "attStmt must be a map").attestationFailure == nil)
        #expect(Set(AttestationFailure.allCases.map(\.rawValue)).count == AttestationFailure.allCases.count)
    }

    @Test func standardRegistryHasEveryFormat() {
        #expect(AttestationFormatRegistry.standard.formats == ["android-key", "android-safetynet", "apple", "fido-u2f", "none", "packed", "tpm"])
    }
}
