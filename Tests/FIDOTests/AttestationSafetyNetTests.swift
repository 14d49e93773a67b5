import Crypto
import FIDO
import Foundation
import Testing
import Tokens
import JSON

/// `android-safetynet` (WebAuthn L3 §8.5): a JWS built and signed here, one rule broken at a
/// time.
@Suite struct AttestationSafetyNetTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued
    let intermediate: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root("Signet SafetyNet Test Root")
        intermediate = try PKI.intermediate("Signet SafetyNet Test CA", by: root)
    }

    /// The leaf that signs responses: issued to attest.android.com unless told otherwise.
    func leaf(hostname: String = "attest.android.com", inSAN: Bool = true) throws -> PKI.Issued {
        try PKI.leaf(
            subject: [(X509OID.commonName, hostname)], by: intermediate,
            extensions: inSAN ? [PKI.basicConstraints(ca: false), PKI.dnsSAN([hostname])] : [PKI.basicConstraints(ca: false)])
    }

    struct Payload {
        var nonce: String
        var timestampMs: Int64 = Int64(PKI.verificationTime.timeIntervalSince1970 * 1000) - 5_000
        var ctsProfileMatch = true
        var basicIntegrity = true

        var json: [UInt8] {
            let members = [
                #""nonce":"\#(nonce)""#, #""timestampMs":\#(timestampMs)"#, #""apkPackageName":"com.google.android.gms""#,
                #""ctsProfileMatch":\#(ctsProfileMatch)"#, #""basicIntegrity":\#(basicIntegrity)"#, #""evaluationType":"BASIC""#,
            ]
            return Array(("{" + members.joined(separator: ",") + "}").utf8)
        }
    }

    var expectedNonce: String { Data(SHA256.hash(fixture.signedData)).base64EncodedString() }

    func payload() -> Payload { Payload(nonce: expectedNonce) }

    /// A compact JWS over `payload`, x5c = leaf, intermediate.
    func response(_ payload: Payload, leaf: PKI.Issued? = nil) throws -> String {
        let leaf = try leaf ?? self.leaf()
        let x5c = JSONValue.array([leaf, intermediate].map { .string(Data($0.der).base64EncodedString()) })
        return try JWS.sign(payload: payload.json, header: JWSHeader(algorithm: .es256, additionalParameters: ["x5c": x5c]), key: leaf.key)
    }

    func statement(_ response: String, ver: String = "200616037") -> CBORValue {
        PKI.statement([("ver", .text(ver)), ("response", .bytes(Array(response.utf8)))])
    }

    func failure(_ statement: CBORValue, verifier: AndroidSafetyNetAttestation = AndroidSafetyNetAttestation()) throws -> WebAuthnError? {
        let context = try fixture.context(format: "android-safetynet", statement: statement)
        return attestationError { _ = try verifier.verify(context) }
    }

    @Test func safetyNetAttestationVerifies() throws {
        let leaf = try leaf()
        let statement = statement(try response(payload(), leaf: leaf))
        let result = try AndroidSafetyNetAttestation().verify(try fixture.context(format: "android-safetynet", statement: statement))
        #expect(result.type == .basic)
        #expect(result.trustPath == [leaf.der, intermediate.der])

        let anchor = try root.certificate
        let verifier = fixture.verifier(evaluator: TrustAnchorEvaluator { _, _ in [anchor] })
        let registered = try verifier.verify(
            fixture.response(format: "android-safetynet", statement: statement), expectedChallenge: fixture.challenge,
            verificationTime: PKI.verificationTime)
        #expect(registered.attestationType == .basic)
    }

    // MARK: - Step 1

    @Test func emptyVersionIsRefused() throws {
        let error = try failure(statement(try response(payload()), ver: ""))
        #expect(error?.code == .attestationInvalid)
    }

    @Test func responseThatIsNotAJWSIsRefused() throws {
        let error = try failure(statement("not.a-jws"))
        #expect(error?.code == .attestationInvalid)
    }

    // MARK: - Step 3: the response came from SafetyNet

    @Test func tamperedPayloadIsRefused() throws {
        let parts = try response(payload()).split(separator: ".").map(String.init)
        var other = payload()
        other.timestampMs += 1
        let forged = [parts[0], Base64URL.encode(other.json), parts[2]].joined(separator: ".")
        let error = try failure(statement(forged))
        #expect(error?.code == .attestationSignatureInvalid)
    }

    @Test func headerAlgorithmOtherThanTheKeysIsRefused() throws {
        // Header says ES384; the leaf is P-256, so ES256 is the only algorithm it verifies.
        let leaf = try leaf()
        let x5c = [leaf, intermediate].map { "\"\(Data($0.der).base64EncodedString())\"" }.joined(separator: ",")
        let header = Base64URL.encode(Array(#"{"alg":"ES384","x5c":[\#(x5c)]}"#.utf8))
        let input = header + "." + Base64URL.encode(payload().json)
        let der = try leaf.key.sign(Array(input.utf8), algorithm: .es256)
        let raw = try #require(ECDSASignature.raw(fromDER: der, size: 32))
        let error = try failure(statement(input + "." + Base64URL.encode(raw)))
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    @Test func leafForAnotherHostIsRefused() throws {
        let error = try failure(statement(try response(payload(), leaf: try leaf(hostname: "attest.example.com"))))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func hostnameInCommonNameIsAcceptedWithoutSAN() throws {
        #expect(try failure(statement(try response(payload(), leaf: try leaf(inSAN: false)))) == nil)
    }

    @Test func jwsWithoutX5CIsRefused() throws {
        let leaf = try leaf()
        let jws = try JWS.sign(payload: payload().json, header: JWSHeader(algorithm: .es256), key: leaf.key)
        let error = try failure(statement(jws))
        #expect(error?.code == .attestationInvalid)
    }

    // MARK: - Step 2: nonce

    @Test func nonceForAnotherCeremonyIsRefused() throws {
        var p = payload()
        p.nonce = Data(SHA256.hash(fixture.authData)).base64EncodedString()
        let error = try failure(statement(try response(p)))
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    @Test func nonceInBase64URLIsRefused() throws {
        // SafetyNet's nonce is standard base64; the base64url spelling of the same hash is not it.
        var p = payload()
        p.nonce = Base64URL.encode(SHA256.hash(fixture.signedData))
        #expect(p.nonce != expectedNonce)
        let error = try failure(statement(try response(p)))
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    // MARK: - Step 3: verdict and timestamp

    @Test func ctsProfileMismatchIsRefusedByDefault() throws {
        var p = payload()
        p.ctsProfileMatch = false
        let statement = statement(try response(p))
        let error = try failure(statement)
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .integrityVerdict)
        #expect(try failure(statement, verifier: AndroidSafetyNetAttestation(requiresCTSProfileMatch: false)) == nil)
    }

    @Test func basicIntegrityFailureIsAlwaysRefused() throws {
        var p = payload()
        p.basicIntegrity = false
        let statement = statement(try response(p))
        #expect(try failure(statement)?.attestationFailure == .integrityVerdict)
        let relaxed = AndroidSafetyNetAttestation(requiresCTSProfileMatch: false)
        #expect(try failure(statement, verifier: relaxed)?.attestationFailure == .integrityVerdict)
    }

    @Test(arguments: [-61_000, 61_000] as [Int64])
    func timestampOutsideTheWindowIsRefused(offsetMs: Int64) throws {
        var p = payload()
        p.timestampMs = Int64(PKI.verificationTime.timeIntervalSince1970 * 1000) + offsetMs
        let statement = statement(try response(p))
        let error = try failure(statement)
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .timestampOutOfWindow)
        #expect(try failure(statement, verifier: AndroidSafetyNetAttestation(checksTimestamp: false)) == nil)
        #expect(try failure(statement, verifier: AndroidSafetyNetAttestation(timestampTolerance: 120)) == nil)
    }
}
