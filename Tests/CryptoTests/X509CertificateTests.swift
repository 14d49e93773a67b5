import Foundation
import Testing
@testable import Crypto

// MARK: - Real certificates from ../shared/vectors

@Suite(X509TestVectors.trait)
struct X509CertificateVectorTests {
    @Test func vectorsArePresent() throws {
        #expect(try X509TestVectors.loadAnchors().count == 8)
        #expect(try X509TestVectors.loadRegistrations().filter { !$0.x5c.isEmpty }.count >= 40)
        #expect(try X509TestVectors.loadMDSStatements().count == 5)
    }

    @Test(arguments: X509TestVectors.anchors)
    func trustAnchorParses(_ anchor: X509TestVectors.Anchor) throws {
        let certificate = try X509Certificate(pem: anchor.pem)
        #expect(rfc4514(certificate.subject) == anchor.subject)
        #expect(certificate.subject == certificate.issuer)
        #expect(certificate.isSelfIssued)
        #expect(certificate.notBefore == anchor.notBefore)
        #expect(certificate.notAfter == anchor.notAfter)
        #expect(certificate.sha256Fingerprint.map { String(format: "%02X", $0) }.joined(separator: ":") == anchor.fingerprint)
        #expect(certificate.version == 3)
        #expect(certificate.basicConstraints?.isCA == true)
        #expect(certificate.keyUsage?.contains(.keyCertSign) == true)
        #expect(X509Certificate.verifySignature(of: certificate, by: certificate))
        let key = try certificate.publicKey
        #expect(key.subjectPublicKeyInfo == certificate.subjectPublicKeyInfo)
        #expect(certificate.isValid(at: anchor.notBefore) && !certificate.isValid(at: anchor.notAfter.addingTimeInterval(1)))
    }

    @Test func commonNameHelpersAndAlgorithms() throws {
        let globalSign = try X509TestVectors.anchor("GlobalSign_Root_CA")
        #expect(globalSign.subject.commonName == "GlobalSign Root CA")
        #expect(globalSign.subject.organization == "GlobalSign nv-sa")
        #expect(globalSign.subject.organizationalUnit == "Root CA")
        #expect(globalSign.subject.country == "BE")
        #expect(globalSign.signatureAlgorithmOID == "1.2.840.113549.1.1.5")  // sha1WithRSAEncryption
        #expect(globalSign.serialNumber == [0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x15, 0x4B, 0x5A, 0xC3, 0x94])
        #expect(try globalSign.publicKey.kind == .rsa(bits: 2048))

        let apple = try X509TestVectors.anchor("Apple_WebAuthn_Root_CA")
        #expect(apple.subject.commonName == "Apple WebAuthn Root CA")
        #expect(apple.subject.firstValue(forOID: X509OID.stateOrProvinceName) == "California")
        #expect(apple.subject.country == nil)
        #expect(apple.signatureAlgorithmOID == "1.2.840.10045.4.3.3")  // ecdsa-with-SHA384
        #expect(try apple.publicKey.kind == .ec(.p384))
        #expect(apple.criticalExtensionOIDs == [X509OID.basicConstraints, X509OID.keyUsage])

        // Google's roots have no CN, only serialNumber; the serial needs a sign octet.
        let google = try X509TestVectors.anchor("Google_Hardware_Attestation_Root_1")
        #expect(google.subject.commonName == nil)
        #expect(google.subject.values(forOID: X509OID.serialNumber) == ["f92009e853b6b045"])
        #expect(google.serialNumber == [0x00, 0xE8, 0xFA, 0x19, 0x63, 0x14, 0xD2, 0xFA, 0x18])
        #expect(google.extensionOIDs == ["2.5.29.14", "2.5.29.35", "2.5.29.19", "2.5.29.15", "2.5.29.31"])
    }

    @Test func pemBundles() throws {
        let bundle = X509TestVectors.anchors.map(\.pem).joined(separator: "some text between blocks\n")
        let all = try X509Certificate.certificates(fromPEM: bundle)
        #expect(all.count == 8)
        #expect(all == (try X509TestVectors.anchors.map { try X509Certificate(pem: $0.pem) }))
        #expect(throws: CryptoError("PEM: expected one CERTIFICATE block, found 8")) { try X509Certificate(pem: bundle) }
        let crlf = X509TestVectors.anchors[0].pem.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try X509Certificate(pem: crlf) == X509Certificate(pem: X509TestVectors.anchors[0].pem))
    }

    /// FIDO conformance tool's fake TPM chains whose authorityKeyIdentifier is mis-encoded.
    static let malformedConformanceTPM = ["should verify SHA1 TPM response", "should verify SHA256 TPM response"]

    @Test(arguments: X509TestVectors.registrationsWithX5C.filter { v in !malformedConformanceTPM.contains { v.name.hasSuffix($0) } })
    func everyAttestationCertificateParses(_ vector: X509TestVectors.Registration) throws {
        for der in vector.x5c {
            let certificate = try X509Certificate(derEncoded: der)
            #expect(certificate.derEncoded == der)
            #expect(certificate.sha256Fingerprint == SHA256.hash(der))
            #expect(Set(certificate.extensionOIDs).count == certificate.extensions.count)
        }
        let leaf = try X509Certificate(derEncoded: vector.x5c[0])
        _ = try leaf.publicKey
        #expect(leaf.basicConstraints?.isCA != true, "an attestation leaf is not a CA")
    }

    @Test func mdsCertificatesParse() throws {
        for statement in X509TestVectors.mdsStatements {
            for der in statement.x5c + statement.roots { _ = try X509Certificate(derEncoded: der) }
        }
        let conformance = try X509TestVectors.blobX5C("mds3_blob_simplewebauthn_conformance.jwt")
        #expect(conformance.map(\.subject.commonName) == ["FAKE Metadata 3 BLOB Signing Signer 4 FAKE", "FAKE CA-1 FAKE"])
        let example = try X509TestVectors.blobX5C("mds3_blob_go_webauthn_example.jwt")
        #expect(example.first?.subject.firstValue(forOID: "1.2.840.113549.1.9.1") == "example@example.com")
    }

    // MARK: Extensions

    @Test func packedLeafCarriesTheFIDOAAGUID() throws {
        let vector = try X509TestVectors.registration(named: "test_verify_attestation_from_yubikey_firefox")
        #expect(vector.format == "packed")
        let leaf = try X509Certificate(derEncoded: vector.x5c[0])
        #expect(leaf.subject.organizationalUnit == "Authenticator Attestation")  // WebAuthn §8.2.1
        #expect(leaf.subject.country == "SE")
        #expect(leaf.subject.commonName == "Yubico U2F EE Serial 719807075")
        #expect(leaf.extensionOIDs == ["1.3.6.1.4.1.41482.2", X509OID.fidoU2FTransports, X509OID.fidoAAGUID, X509OID.basicConstraints])
        #expect(leaf.criticalExtensionOIDs == [X509OID.basicConstraints])
        #expect(leaf.basicConstraints == X509BasicConstraints(isCA: false, pathLengthConstraint: nil))
        let aaguid = try #require(try leaf.fidoAAGUID())
        #expect(aaguid == vector.aaguid)
        #expect(Hex.encode(aaguid) == "6d44ba9bf6ec2e49b9300c8fe920cb73")
        let raw = try #require(leaf.extensionValue(oid: X509OID.fidoAAGUID))
        #expect(raw.isCritical == false)
        #expect(raw.value == [0x04, 0x10] + aaguid)
        // id-fido-u2f-ce-transports is a BIT STRING (here: bits 2 and 3, usb and nfc).
        var transports = X509DERReader(try #require(leaf.extensionValue(oid: X509OID.fidoU2FTransports)).value)
        let bits = try transports.readBitString()
        #expect(bits.bytes == [0x30] && bits.unusedBits == 4)
        #expect(leaf.extensionValue(oid: X509OID.appleNonce) == nil)
        #expect(try X509TestVectors.anchor("Apple").fidoAAGUID() == nil)
    }

    @Test(arguments: [
        ("test_verify_attestation_surface_pro_4", "id:494E5443", "ICL", "id:00020000", 3),
        ("should verify TPM response with spec-compliant tcgAtTpm SAN structure", "id:53544D20", "ST33HTPxAHA6", "id:00470004", 3),
        ("should verify TPM response with non-spec-compliant tcgAtTpm SAN structure", "id:4E544300", "NPCT75x", "id:72", 1),
        ("w3c-webauthn-l3-sec16/TPMES256", "id:00000000", "WebAuthn test vectors", "id:00000000", 1),
    ])
    func tpmSubjectAlternativeName(_ name: String, _ manufacturer: String, _ model: String, _ version: String, _ rdnCount: Int) throws {
        let vector = try X509TestVectors.registration(named: name)
        #expect(vector.format == "tpm")
        let aik = try X509Certificate(derEncoded: vector.x5c[0])
        // WebAuthn §8.3.1: empty subject, critical SAN, EKU tcg-kp-AIKCertificate, not a CA.
        #expect(aik.subject.isEmpty)
        #expect(aik.extensionValue(oid: X509OID.subjectAltName)?.isCritical == true)
        #expect(aik.extendedKeyUsage == [X509OID.tcgKpAIKCertificate])
        #expect(aik.basicConstraints?.isCA == false)
        #expect(aik.keyUsage == .digitalSignature)
        let names = try #require(aik.subjectAlternativeNames)
        #expect(names.count == 1)
        guard case .directoryName(let directory) = names.first else {
            Issue.record("SAN is not a directoryName")
            return
        }
        #expect(directory.relativeDistinguishedNames.count == rdnCount)
        #expect(directory.firstValue(forOID: X509OID.tpmManufacturer) == manufacturer)
        #expect(directory.firstValue(forOID: X509OID.tpmModel) == model)
        #expect(directory.firstValue(forOID: X509OID.tpmVersion) == version)
    }

    /// Their authorityKeyIdentifier has keyIdentifier `[0]` constructed instead of
    /// `[0] IMPLICIT OCTET STRING` (OpenSSL 3.0 can never chain such a certificate), and the
    /// leaf's certificatePolicies has trailing data in a UserNotice. Parsing refuses both
    /// certificates and names the first malformed extension.
    @Test(arguments: malformedConformanceTPM)
    func conformanceTPMCertificatesWithBrokenExtensionsAreRefused(_ name: String) throws {
        let vector = try X509TestVectors.registration(named: name)
        #expect(vector.x5c.count == 2)
        #expect(throws: CryptoError("X.509: malformed extension 2.5.29.32")) { try X509Certificate(derEncoded: vector.x5c[0]) }
        #expect(throws: CryptoError("X.509: malformed extension 2.5.29.35")) { try X509Certificate(derEncoded: vector.x5c[1]) }
    }

    /// Android Key Attestation (WebAuthn §8.4.1) walked with X509DERReader: the challenge is the
    /// client data hash; purpose SIGN, origin GENERATED, no allApplications.
    @Test(arguments: X509TestVectors.registrationsWithX5C.filter { $0.format == "android-key" && $0.valid })
    func androidKeyDescription(_ vector: X509TestVectors.Registration) throws {
        let leaf = try X509Certificate(derEncoded: vector.x5c[0])
        let ext = try #require(leaf.extensionValue(oid: X509OID.androidKeyDescription))
        #expect(!ext.isCritical)
        try X509DERReader.validate(ext.value)

        var outer = X509DERReader(ext.value)
        var description = try outer.readSequence()
        try outer.finish()
        let attestationVersion = try description.readInt()
        let attestationSecurityLevel = try description.readEnumerated()
        _ = try description.readInt()  // keymaster/keyMint version
        _ = try description.readEnumerated()
        let challenge = try description.readOctetString()
        _ = try description.readOctetString()  // uniqueId
        let software = try description.readSequence()
        let tee = try description.readSequence()
        try description.finish()

        #expect(attestationVersion >= 1)
        #expect((0...2).contains(attestationSecurityLevel))
        #expect(challenge == SHA256.hash(vector.clientDataJSON))

        var purposes: [Int] = []
        var origins: [Int] = []
        var tags: Set<UInt32> = []
        for list in [software, tee] {
            var reader = list
            var previous: UInt32 = 0
            while let tag = try reader.peekTag() {
                #expect(tag.tagClass == .contextSpecific && tag.isConstructed)
                #expect(tag.number > previous, "AuthorizationList tags are in ascending order")
                previous = tag.number
                tags.insert(tag.number)
                var field = try reader.readExplicit(tag.number)
                switch tag.number {
                case 1:  // purpose [1] EXPLICIT SET OF INTEGER
                    var set = try field.readSet()
                    while !set.isAtEnd { purposes.append(try set.readInt()) }
                case 702:  // origin [702] EXPLICIT INTEGER
                    origins.append(try field.readInt())
                default:
                    try field.skipElement()
                }
                try field.finish()
            }
        }
        #expect(purposes.contains(2), "KM_PURPOSE_SIGN")
        #expect(origins.contains(0), "KM_ORIGIN_GENERATED")
        #expect(!tags.contains(600), "allApplications must be absent")
    }

    /// Apple anonymous attestation (WebAuthn §8.8): nonce = SHA-256(authData ‖ clientDataHash).
    @Test(arguments: X509TestVectors.registrationsWithX5C.filter { $0.format == "apple" })
    func appleNonceExtension(_ vector: X509TestVectors.Registration) throws {
        let leaf = try X509Certificate(derEncoded: vector.x5c[0])
        let ext = try #require(leaf.extensionValue(oid: X509OID.appleNonce))
        var outer = X509DERReader(ext.value)
        var sequence = try outer.readSequence()
        try outer.finish()
        var tagged = try sequence.readExplicit(1)
        try sequence.finish()
        let nonce = try tagged.readOctetString()
        try tagged.finish()
        #expect(nonce == SHA256.hash(vector.authData + SHA256.hash(vector.clientDataJSON)))
    }

    /// RFC 4514-style string in the format of the vectors' `info.subject` (reversed RDNs).
    private func rfc4514(_ name: X509Name) -> String {
        let short = [
            "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
        ]
        return name.relativeDistinguishedNames.reversed()
            .map { rdn in rdn.map { "\(short[$0.oid] ?? $0.oid)=\($0.value)" }.joined(separator: "+") }
            .joined(separator: ",")
    }
}
