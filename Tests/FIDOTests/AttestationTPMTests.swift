import Crypto
import FIDO
import Foundation
import Testing

/// `tpm` (WebAuthn L3 §8.3, §8.3.1): an ECC TPM statement built field by field, one rule broken
/// at a time.
@Suite struct AttestationTPMTests {
    typealias PKI = AttestationTestPKI
    let fixture: PKI.Fixture
    let root: PKI.Issued

    init() throws {
        fixture = try PKI.Fixture()
        root = try PKI.root("Signet TPM Test Root")
    }

    static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func sized(_ b: [UInt8]) -> [UInt8] { u16(UInt16(b.count)) + b }

    /// Every part of a TPM statement, valid by default; tests change one.
    struct Parts {
        var ver: CBORValue = .text("2.0")
        var alg = -7
        var pubAreaType: UInt16 = 0x0023
        var nameAlg: UInt16 = 0x000B
        var curve: UInt16 = 0x0003
        var x: [UInt8]
        var y: [UInt8]
        var pubAreaSuffix: [UInt8] = []
        /// When set, pubArea is an RSA key with this modulus instead.
        var rsaModulus: [UInt8]?
        var magic: UInt32 = 0xFF54_4347
        var attestType: UInt16 = 0x8017
        var extraData: [UInt8]?
        var attestedName: [UInt8]?
        var certInfoSuffix: [UInt8] = []
        var manufacturer = "id:494E5443"
        var sanAttributes: [(String, String)]?
        var subject: [(String, String)] = []
        var aikVersion = 3
        var eku: [String]? = [X509OID.tcgKpAIKCertificate]
        var ca = false
        var aaguid: [UInt8]?
        var signedData: [UInt8]?
    }

    func parts() -> Parts { Parts(x: fixture.authenticator.x, y: fixture.authenticator.y, aaguid: fixture.aaguid) }

    /// TPMT_PUBLIC for an ECC key: type, nameAlg, objectAttributes, authPolicy, TPMS_ECC_PARMS
    /// (symmetric NULL, scheme ECDSA/SHA-256, curve, kdf NULL), unique (x, y).
    static func pubArea(_ p: Parts) -> [UInt8] {
        if let modulus = p.rsaModulus {
            // TPMS_RSA_PARMS: symmetric NULL, scheme NULL, keyBits, exponent 0 (= 65537).
            return u16(0x0001) + u16(p.nameAlg) + u32(0x0005_0072) + sized([]) + u16(0x0010) + u16(0x0010)
                + u16(UInt16(modulus.count * 8)) + u32(0) + sized(modulus) + p.pubAreaSuffix
        }
        return u16(p.pubAreaType) + u16(p.nameAlg) + u32(0x0005_0072) + sized([])
            + u16(0x0010) + u16(0x0018) + u16(0x000B) + u16(p.curve) + u16(0x0010)
            + sized(p.x) + sized(p.y) + p.pubAreaSuffix
    }

    /// TPMS_ATTEST of type CERTIFY over `pubArea`.
    func certInfo(_ p: Parts, pubArea: [UInt8]) -> [UInt8] {
        let extraData = p.extraData ?? SHA256.hash(fixture.signedData)
        let name = p.attestedName ?? Self.u16(0x000B) + SHA256.hash(pubArea)
        return Self.u32(p.magic) + Self.u16(p.attestType) + Self.sized([0x00, 0x0B] + Array(repeating: 7, count: 32)) + Self.sized(extraData)
            + Array(repeating: 0xEE, count: 17) + Array(repeating: 0x01, count: 8) + Self.sized(name) + Self.sized([]) + p.certInfoSuffix
    }

    func aikCertificate(_ p: Parts) throws -> PKI.Issued {
        var extensions = [PKI.basicConstraints(ca: p.ca)]
        let san = p.sanAttributes ?? [
            (X509OID.tpmManufacturer, p.manufacturer), (X509OID.tpmModel, "SignetTPM"), (X509OID.tpmVersion, "id:00010002"),
        ]
        if !san.isEmpty { extensions.append(PKI.directoryNameSAN(san)) }
        if let eku = p.eku { extensions.append(PKI.extendedKeyUsage(eku)) }
        if let aaguid = p.aaguid { extensions.append(PKI.aaguid(aaguid)) }
        return try PKI.leaf(subject: p.subject, by: root, version: p.aikVersion, extensions: extensions)
    }

    func statement(_ p: Parts) throws -> (statement: CBORValue, aik: PKI.Issued) {
        let pubArea = Self.pubArea(p)
        let certInfo = certInfo(p, pubArea: pubArea)
        let aik = try aikCertificate(p)
        let sig = try aik.key.sign(p.signedData ?? certInfo, algorithm: .es256)
        let statement = PKI.statement([
            ("ver", p.ver), ("alg", .int(p.alg)), ("x5c", PKI.x5c([aik])), ("sig", .bytes(sig)), ("certInfo", .bytes(certInfo)),
            ("pubArea", .bytes(pubArea)),
        ])
        return (statement, aik)
    }

    func failure(_ change: (inout Parts) -> Void, verifier: TPMAttestation = TPMAttestation()) throws -> WebAuthnError? {
        var p = parts()
        change(&p)
        let context = try fixture.context(format: "tpm", statement: try statement(p).statement)
        return attestationError { _ = try verifier.verify(context) }
    }

    // MARK: - Success

    @Test func tpmAttestationVerifies() throws {
        let (statement, aik) = try statement(parts())
        let result = try TPMAttestation().verify(try fixture.context(format: "tpm", statement: statement))
        #expect(result.type == .attCA)
        #expect(result.trustPath == [aik.der])

        let anchor = try root.certificate
        let verifier = fixture.verifier(evaluator: TrustAnchorEvaluator { _, _ in [anchor] })
        let registered = try verifier.verify(
            fixture.response(format: "tpm", statement: statement), expectedChallenge: fixture.challenge,
            verificationTime: PKI.verificationTime)
        #expect(registered.attestationType == .attCA)
    }

    @Test func sha1NameAlgVerifies() throws {
        // nameAlg SHA-1: attested name = 0x0004 ‖ SHA-1(pubArea).
        #expect(
            try failure { p in
                p.nameAlg = 0x0004
                p.attestedName = Self.u16(0x0004) + InsecureDigestForTests.sha1(Self.pubArea(p))
            } == nil)
    }

    /// The test-side SHA-1 used to build inputs is right (FIPS 180-2 Appendix A.1, "abc").
    @Test func testSHA1KnownAnswer() {
        #expect(Hex.encode(InsecureDigestForTests.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    // MARK: - Step 1: syntax

    @Test func versionOtherThan2Point0IsRefused() throws {
        let error = try failure { $0.ver = .text("1.2") }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.step == "§8.3 step 1")
    }

    // MARK: - Step 2: pubArea

    @Test func pubAreaForAnotherKeyIsRefused() throws {
        let error = try failure { $0.x = Array(repeating: 0x11, count: 32) }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .publicKeyMismatch)
    }

    @Test func pubAreaOnAnotherCurveIsRefused() throws {
        let error = try failure { $0.curve = 0x0004 }
        #expect(error?.attestationFailure == .publicKeyMismatch)
    }

    @Test func rsaPubAreaForAnECCredentialIsRefused() throws {
        let error = try failure { $0.rsaModulus = [0xC5] + Array(repeating: 0x3B, count: 255) }
        #expect(error?.attestationFailure == .publicKeyMismatch)
    }

    @Test func pubAreaOfAnotherKeyTypeIsRefused() throws {
        // TPM_ALG_KEYEDHASH is neither RSA nor ECC.
        let error = try failure { $0.pubAreaType = 0x0008 }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func pubAreaWithTrailingBytesIsRefused() throws {
        let error = try failure { $0.pubAreaSuffix = [0x00] }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    // MARK: - Step 4: certInfo

    @Test func wrongMagicIsRefused() throws {
        let error = try failure { $0.magic = 0xFF54_4348 }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func attestTypeOtherThanCertifyIsRefused() throws {
        // TPM_ST_ATTEST_QUOTE.
        let error = try failure { $0.attestType = 0x8018 }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func extraDataForAnotherCeremonyIsRefused() throws {
        let error = try failure { $0.extraData = SHA256.hash(self.fixture.authData) }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    @Test func extraDataWithAnotherHashIsRefused() throws {
        // alg ES256 means SHA-256; a SHA-1 extraData does not match.
        let error = try failure { $0.extraData = InsecureDigestForTests.sha1(self.fixture.signedData) }
        #expect(error?.attestationFailure == .nonceMismatch)
    }

    @Test func attestedNameOfAnotherObjectIsRefused() throws {
        let error = try failure { $0.attestedName = Self.u16(0x000B) + Array(repeating: 0, count: 32) }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func unknownNameAlgIsRefused() throws {
        let error = try failure { $0.nameAlg = 0x0012 }  // SM3_256
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func certInfoWithTrailingBytesIsRefused() throws {
        let error = try failure { $0.certInfoSuffix = [0x00] }
        #expect(error?.attestationFailure == .tpmStructure)
    }

    @Test func unknownAlgIsRefused() throws {
        let error = try failure { $0.alg = -999 }
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    // MARK: - Step 5: signature and §8.3.1

    @Test func algThatDoesNotFitTheAIKIsRefused() throws {
        // RS256 hashes extraData with SHA-256 too, so only the key check can catch it.
        let error = try failure { $0.alg = -257 }
        #expect(error?.code == .attestationAlgorithmMismatch)
    }

    @Test func signatureOverOtherDataIsRefused() throws {
        let error = try failure { $0.signedData = self.fixture.signedData }
        #expect(error?.code == .attestationSignatureInvalid)
    }

    @Test func aikWithSubjectIsRefused() throws {
        let error = try failure { $0.subject = [(X509OID.commonName, "AIK")] }
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func versionOneAIKIsRefused() throws {
        let error = try failure { $0.aikVersion = 1 }
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func aikWithoutSubjectAltNameIsRefused() throws {
        let error = try failure { $0.sanAttributes = [] }
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func aikWithoutModelIsRefused() throws {
        let error = try failure { $0.sanAttributes = [(X509OID.tpmManufacturer, "id:494E5443"), (X509OID.tpmVersion, "id:00010002")] }
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test(arguments: ["id:12345678", "id:494E54", "INTC"])
    func unregisteredManufacturerIsRefused(_ manufacturer: String) throws {
        let error = try failure { $0.manufacturer = manufacturer }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .tpmManufacturer)
    }

    @Test(arguments: ["id:FFFFF1D0", "id:00000000"])
    func testManufacturerNeedsTestMode(_ manufacturer: String) throws {
        let refused = try failure { $0.manufacturer = manufacturer }
        #expect(refused?.attestationFailure == .tpmManufacturer)
        #expect(try failure({ $0.manufacturer = manufacturer }, verifier: TPMAttestation(acceptsTestManufacturers: true)) == nil)
    }

    @Test func lowerCaseManufacturerIsAccepted() throws {
        #expect(try failure { $0.manufacturer = "id:494e5443" } == nil)
    }

    @Test func aikWithoutAIKExtendedKeyUsageIsRefused() throws {
        let noEKU = try failure { $0.eku = nil }
        #expect(noEKU?.attestationFailure == .certificateRequirements)
        let otherEKU = try failure { $0.eku = ["1.3.6.1.5.5.7.3.2"] }
        #expect(otherEKU?.attestationFailure == .certificateRequirements)
    }

    @Test func caAIKIsRefused() throws {
        let error = try failure { $0.ca = true }
        #expect(error?.attestationFailure == .certificateRequirements)
    }

    @Test func aaguidExtensionForAnotherAuthenticatorIsRefused() throws {
        let error = try failure { $0.aaguid = Array(repeating: 0xC3, count: 16) }
        #expect(error?.code == .attestationInvalid)
        #expect(error?.attestationFailure == .aaguidMismatch)
    }

    @Test func manufacturerRegistry() {
        #expect(TPMManufacturer(attributeValue: "id:4D534654")?.vendorName == "Microsoft")
        #expect(TPMManufacturer(attributeValue: "id:FFFFF1D0") == .fidoConformance)
        #expect(TPMManufacturer.fidoConformance.isTestIdentifier && !TPMManufacturer.fidoConformance.isRegistered)
        #expect(TPMManufacturer.w3cTestVectors.description == "id:00000000")
        #expect(TPMManufacturer(attributeValue: "id:4D53465") == nil)
        #expect(TPMManufacturer(attributeValue: "ID:4D534654") == nil)
    }
}

/// SHA-1 for building test inputs, checked against FIPS 180-2 Appendix A ("abc").
enum InsecureDigestForTests {
    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var padded = message + [0x80]
        while padded.count % 64 != 56 { padded.append(0) }
        let bits = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) { padded.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        for chunk in stride(from: 0, to: padded.count, by: 64) {
            var w = (0..<16).map { i in padded[(chunk + 4 * i)..<(chunk + 4 * i + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w.append(x << 1 | x >> 31)
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch i {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, t)
            }
            h = [h[0] &+ a, h[1] &+ b, h[2] &+ c, h[3] &+ d, h[4] &+ e]
        }
        return h.flatMap { v in [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    }
}
