import Crypto
import FIDO
import Foundation
import Testing

/// `fido-u2f` (WebAuthn L3 §8.6): one rule broken at a time.
@Suite struct AttestationFIDOU2FTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture(aaguid: Array(repeating: 0, count: 16))
        root = try PKI.root()
    }

    /// 0x00 ‖ rpIdHash ‖ clientDataHash ‖ credentialId ‖ 0x04 ‖ x ‖ y.
    var verificationData: [UInt8] {
        let a = fixture.authenticator
        return [0x00] + SHA256.hash(Array(TestAuthenticator.rpID.utf8)) + fixture.clientDataHash + a.credentialID + [0x04] + a.x + a.y
    }

    func statement(leaf: PKI.Issued, signedData: [UInt8]? = nil, x5c: [PKI.Issued]? = nil) throws -> CBORValue {
        let sig = try leaf.key.sign(signedData ?? verificationData, algorithm: .es256)
        return PKI.statement([("x5c", PKI.x5c(x5c ?? [leaf])), ("sig", .bytes(sig))])
    }

    func failure(_ statement: CBORValue, fixture: PKI.Fixture? = nil, verifier: FIDOU2FAttestation = FIDOU2FAttestation()) throws
        -> WebAuthnError?
    {
        let context = try (fixture ?? self.fixture).context(format: "fido-u2f", statement: statement)
        return attestationError { _ = try verifier.verify(context) }
    }

    @Test func u2fAttestationVerifies() throws {
        let leaf = try PKI.leaf(by: root)
        let result = try FIDOU2FAttestation().verify(try fixture.context(format: "fido-u2f", statement: try statement(leaf: leaf)))
        #expect(result.type == .basic)
        #expect(result.trustPath == [leaf.der])
    }

    @Test func algMemberIsRefused() throws {
        let leaf = try PKI.leaf(by: root)
        let sig = try leaf.key.sign(verificationData, algorithm: .es256)
        let error = try failure(PKI.statement([("x5c", PKI.x5c([leaf])), ("sig", .bytes(sig)), ("alg", .int(-7))]))
        #expect(error?.code == .attestationInvalid)
    }

    @Test func moreThanOneCertificateIsRefused() throws {
        let leaf = try PKI.leaf(by: root)
        let error = try failure(try statement(leaf: leaf, x5c: [leaf, root]))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.step == "§8.6 step 2")
    }

    @Test func certificateKeyThatIsNotP256IsRefused() throws {
        let p384 = try PrivateKey.fromPEM(PKI.p384PEM)
        let leaf = try PKI.leaf(by: root, key: p384)
        let sig = try p384.sign(verificationData, algorithm: .es384)
        let error = try failure(PKI.statement([("x5c", PKI.x5c([leaf])), ("sig", .bytes(sig))]))
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func nonZeroAAGUIDIsRefusedByDefault() throws {
        let fixture = try PKI.Fixture(aaguid: Array(repeating: 0xA1, count: 16))
        let leaf = try PKI.leaf(by: root)
        let a = fixture.authenticator
        let data = [0x00] + SHA256.hash(Array(TestAuthenticator.rpID.utf8)) + fixture.clientDataHash + a.credentialID + [0x04] + a.x + a.y
        let statement = try statement(leaf: leaf, signedData: data)
        let error = try failure(statement, fixture: fixture)
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .aaguidNotZero)
        // Without the policy, the same statement verifies (§8.6 has no AAGUID check).
        #expect(try failure(statement, fixture: fixture, verifier: FIDOU2FAttestation(requiresZeroAAGUID: false)) == nil)
    }

    @Test func credentialKeyThatIsNotP256IsRefused() throws {
        // An Ed25519 credential (RFC 8032 §7.1 test 1 public key) has no X9.62 form.
        let edKey: [UInt8] = Hex.decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")!
        let cose = CBORValue.map([
            (key: .int(1), value: .int(1)), (key: .int(3), value: .int(-8)), (key: .int(-1), value: .int(6)), (key: .int(-2), value: .bytes(edKey)),
        ]).encoded
        let authData = fixture.authenticator.authenticatorData(flags: TestAuthenticator.up, signCount: 0, attested: true, credentialPublicKey: cose)
        let leaf = try PKI.leaf(by: root)
        let context = try fixture.context(format: "fido-u2f", statement: try statement(leaf: leaf), authData: authData)
        let error = attestationError { _ = try FIDOU2FAttestation().verify(context) }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.step == "§8.6 step 4")
    }

    @Test func signatureOverOtherDataIsRefused() throws {
        // The WebAuthn signed data instead of the U2F verificationData.
        let error = try failure(try statement(leaf: try PKI.leaf(by: root), signedData: fixture.signedData))
        #expect(error?.code == .attestationSignatureInvalid)
    }

    /// The AAGUID never selects anchors for fido-u2f (it is not signed), even when the zero
    /// AAGUID policy is off and the client sent one.
    @Test func trustLookupGetsNoAAGUID() throws {
        let fixture = try PKI.Fixture(aaguid: Array(repeating: 0xA1, count: 16))
        let a = fixture.authenticator
        let data = [0x00] + SHA256.hash(Array(TestAuthenticator.rpID.utf8)) + fixture.clientDataHash + a.credentialID + [0x04] + a.x + a.y
        let recorder = LookupRecorder()
        let anchor = try root.certificate
        let evaluator = TrustAnchorEvaluator { aaguid, format in
            recorder.record(aaguid, format)
            return [anchor]
        }
        let verifier = fixture.verifier(options: AttestationFormatOptions(u2fRequiresZeroAAGUID: false), evaluator: evaluator)
        _ = try verifier.verify(
            fixture.response(format: "fido-u2f", statement: try statement(leaf: try PKI.leaf(by: root), signedData: data)),
            expectedChallenge: fixture.challenge, verificationTime: PKI.verificationTime)
        #expect(recorder.calls.count == 1)
        #expect(recorder.calls.first?.aaguid == nil)
        #expect(recorder.calls.first?.format == "fido-u2f")
    }
}

/// Records anchor lookups (called from the evaluator's @Sendable closure).
final class LookupRecorder: @unchecked Sendable {
    // @unchecked Sendable: every access to `storage` holds `lock`.
    private let lock = NSLock()
    private var storage: [(aaguid: AAGUID?, format: String)] = []

    func record(_ aaguid: AAGUID?, _ format: String) {
        lock.lock()
        defer { lock.unlock() }
        storage.append((aaguid, format))
    }

    var calls: [(aaguid: AAGUID?, format: String)] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
