import Foundation
import Testing
@testable import Crypto

// MARK: - Synthetic certificates: every parse rule

@Suite struct X509CertificateParsingTests {
    typealias Build = X509TestCertificates

    @Test func synthesizedCertificateRoundTrips() throws {
        let root = try Build.root("Round Trip Root", pathLength: 2)
        let certificate = try root.certificate
        #expect(certificate.version == 3)
        #expect(certificate.serialNumber == [0x01])
        #expect(certificate.subject.commonName == "Round Trip Root")
        #expect(certificate.basicConstraints == X509BasicConstraints(isCA: true, pathLengthConstraint: 2))
        #expect(certificate.keyUsage == [.keyCertSign, .cRLSign])
        #expect(certificate.extendedKeyUsage == nil)
        #expect(certificate.subjectAlternativeNames == nil)
        #expect(certificate.signatureAlgorithmOID == "1.2.840.10045.4.3.2")
        #expect(certificate.notBefore == X509TestVectors.utc(2024, 1, 1))
        #expect(certificate.notAfter == X509TestVectors.utc(2034, 1, 1))
        #expect(try certificate.publicKey.subjectPublicKeyInfo == root.key.publicKey().subjectPublicKeyInfo)
        #expect(certificate.description.hasPrefix("X509Certificate(sha256: "))
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data(root.der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        #expect(try X509Certificate(pem: pem) == certificate)
    }

    @Test func namesKeepRDNOrderAndMultiValuedRDNs() throws {
        let key = try PrivateKey.generateP256()
        let subject = Build.name([(X509OID.countryName, "AA"), (X509OID.organizationName, "Örg ✓"), (X509OID.commonName, "Leaf")])
        let issuer = Build.name([(X509OID.tpmManufacturer, "id:FFFFF1D0"), (X509OID.tpmModel, "M"), (X509OID.tpmVersion, "id:1")], multiValued: true)
        let certificate = try X509Certificate(
            derEncoded: try Build.build(subject: subject, issuer: issuer, subjectKey: try key.publicKey(), signer: key))
        #expect(certificate.subject.relativeDistinguishedNames.map { $0.map(\.oid) } == [["2.5.4.6"], ["2.5.4.10"], ["2.5.4.3"]])
        #expect(certificate.subject.organization == "Örg ✓")
        #expect(certificate.subject.derEncoded == subject)
        #expect(certificate.issuer.relativeDistinguishedNames.count == 1)
        #expect(certificate.issuer.attributes.count == 3)
        #expect(certificate.issuer.firstValue(forOID: X509OID.tpmManufacturer) == "id:FFFFF1D0")
        #expect(!certificate.isSelfIssued)
        #expect(certificate.version == 3)
        #expect(certificate.extensions.isEmpty)
    }

    @Test func negativeSerialNumbersAreKeptAsEncoded() throws {
        let key = try PrivateKey.generateP256()
        let n = Build.name([(X509OID.commonName, "Negative")])
        let der = try Build.build(serial: [0x85, 0x11], subject: n, issuer: n, subjectKey: try key.publicKey(), signer: key)
        #expect(try X509Certificate(derEncoded: der).serialNumber == [0x85, 0x11])
    }

    @Test func malformedStringAttributesAreRefused() throws {
        let key = try PrivateKey.generateP256()
        for value in [DER.tlv(0x0C, [0xC3, 0x28]), DER.tlv(0x1E, [0x00, 0x48, 0x00])] {  // bad UTF-8; odd BMPString
            let subject = Build.seq([DER.tlv(0x31, DER.sequence(DER.oid(X509OID.commonName), value))])
            let der = try Build.build(subject: subject, issuer: subject, subjectKey: try key.publicKey(), signer: key)
            // OpenSSL canonicalises names to UTF-8 while decoding, so d2i_X509 itself refuses these.
            #expect(throws: CryptoError("X.509: not a valid certificate")) { try X509Certificate(derEncoded: der) }
        }
    }

    @Test func nonStringAttributeValuesAreShownAsHex() throws {
        let key = try PrivateKey.generateP256()
        // An attribute whose value is a SEQUENCE (not a string), and one that is a BMPString ("Hi").
        let subject = Build.seq([
            DER.tlv(0x31, DER.sequence(DER.oid("2.5.4.45"), DER.sequence([0x02, 0x01, 0x01]))),
            DER.tlv(0x31, DER.sequence(DER.oid(X509OID.commonName), DER.tlv(0x1E, [0x00, 0x48, 0x00, 0x69]))),
        ])
        let certificate = try X509Certificate(
            derEncoded: try Build.build(subject: subject, issuer: subject, subjectKey: try key.publicKey(), signer: key))
        #expect(certificate.subject.attributes == [.init(oid: "2.5.4.45", value: "#3003020101"), .init(oid: "2.5.4.3", value: "Hi")])
    }

    @Test func subjectAlternativeNamesOfEveryKind() throws {
        let key = try PrivateKey.generateP256()
        let directory = Build.name([(X509OID.tpmManufacturer, "id:494E5443"), (X509OID.tpmModel, "ICL")])
        let san = Build.seq([
            DER.tlv(0x81, Array("a@example.com".utf8)),
            DER.tlv(0x82, Array("example.com".utf8)),
            DER.tlv(0x86, Array("https://example.com/x".utf8)),
            DER.tlv(0x87, [127, 0, 0, 1]),
            DER.tlv(0xA4, directory),
            DER.tlv(0x88, Array(DER.oid("1.2.3.4").dropFirst(2))),
            DER.tlv(0xA0, DER.oid("1.3.6.1.4.1.311.20.2.3") + DER.tlv(0xA0, DER.tlv(0x0C, Array("upn".utf8)))),
        ])
        let n = Build.name([(X509OID.commonName, "SAN")])
        let certificate = try X509Certificate(
            derEncoded: try Build.build(
                subject: n, issuer: n, subjectKey: try key.publicKey(),
                extensions: [.init(oid: X509OID.subjectAltName, critical: false, value: san)], signer: key))
        let names = try #require(certificate.subjectAlternativeNames)
        #expect(names.count == 7)
        #expect(names[0] == .email("a@example.com"))
        #expect(names[1] == .dns("example.com"))
        #expect(names[2] == .uri("https://example.com/x"))
        #expect(names[3] == .ipAddress([127, 0, 0, 1]))
        guard case .directoryName(let dn) = names[4] else {
            Issue.record("expected a directoryName")
            return
        }
        #expect(dn.derEncoded == directory)
        #expect(dn.values(forOID: X509OID.tpmModel) == ["ICL"])
        #expect(names[5] == .registeredID("1.2.3.4"))
        #expect(names[6] == .otherName(typeID: "1.3.6.1.4.1.311.20.2.3", value: DER.tlv(0x0C, Array("upn".utf8))))
    }

    @Test func keyUsageBitsAndExtendedKeyUsage() throws {
        let root = try Build.root()
        let leaf = try Build.issue(
            "KU", by: root, ca: false,
            extra: [.init(oid: X509OID.extendedKeyUsage, critical: false, value: Build.extendedKeyUsage([X509OID.tcgKpAIKCertificate, "1.3.6.1.5.5.7.3.2"]))],
            keyUsageBits: [0, 1, 4, 8])
        let certificate = try leaf.certificate
        #expect(certificate.keyUsage == [.digitalSignature, .nonRepudiation, .keyAgreement, .decipherOnly])
        #expect(certificate.extendedKeyUsage == [X509OID.tcgKpAIKCertificate, "1.3.6.1.5.5.7.3.2"])
        #expect(certificate.basicConstraints == X509BasicConstraints(isCA: false, pathLengthConstraint: nil))
        #expect(certificate.issuer == (try root.certificate).subject)
        #expect(X509Certificate.verifySignature(of: certificate, by: try root.certificate))
        #expect(!X509Certificate.verifySignature(of: certificate, by: certificate))
    }

    @Test func fidoAAGUIDMustBeANonCriticalSixteenByteOctetString() throws {
        let key = try PrivateKey.generateP256()
        let n = Build.name([(X509OID.commonName, "AAGUID")])
        func certificate(critical: Bool, value: [UInt8]) throws -> X509Certificate {
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: try key.publicKey(),
                    extensions: [.init(oid: X509OID.fidoAAGUID, critical: critical, value: value)], signer: key))
        }
        let aaguid = [UInt8](repeating: 0xAB, count: 16)
        #expect(try certificate(critical: false, value: DER.tlv(0x04, aaguid)).fidoAAGUID() == aaguid)
        #expect(throws: CryptoError("X.509: the FIDO AAGUID extension must not be critical")) {
            try certificate(critical: true, value: DER.tlv(0x04, aaguid)).fidoAAGUID()
        }
        #expect(throws: CryptoError("X.509: the FIDO AAGUID extension is not 16 bytes")) {
            try certificate(critical: false, value: DER.tlv(0x04, [1, 2, 3])).fidoAAGUID()
        }
        #expect(throws: CryptoError("DER: expected UNIVERSAL 4 (primitive), found UNIVERSAL 2 (primitive)")) {
            try certificate(critical: false, value: DER.tlv(0x02, [1])).fidoAAGUID()
        }
    }

    // MARK: Refusals, each with its precise reason

    @Test func refusesOversizedAndEmptyInput() {
        #expect(throws: CryptoError("X.509: empty certificate")) { try X509Certificate(derEncoded: []) }
        let big = DER.tlv(0x30, [UInt8](repeating: 0, count: 16 * 1024))
        #expect(throws: CryptoError("X.509: certificate larger than 16384 bytes")) { try X509Certificate(derEncoded: big) }
    }

    @Test func refusesNonDEREncodings() throws {
        let der = try Build.root().der
        #expect(der[0] == 0x30 && der[1] == 0x82)
        let body = Array(der[4...])

        #expect(throws: CryptoError("X.509: not a DER certificate (DER: 1 unexpected trailing bytes)")) {
            try X509Certificate(derEncoded: der + [0])
        }
        #expect(throws: CryptoError("X.509: not a DER certificate (DER: indefinite length is not DER)")) {
            try X509Certificate(derEncoded: [0x30, 0x80] + body + [0, 0])
        }
        #expect(throws: CryptoError("X.509: not a DER certificate (DER: length not minimally encoded)")) {
            try X509Certificate(derEncoded: [0x30, 0x83, 0x00, der[2], der[3]] + body)
        }
        #expect(throws: CryptoError("X.509: not a DER certificate (DER: length exceeds the available data)")) {
            try X509Certificate(derEncoded: Array(der.dropLast()))
        }
        // A BER "TRUE" (0x01) as the critical flag.
        let berTrue = try #require(replacing([0x01, 0x01, 0xFF], with: [0x01, 0x01, 0x01], in: der))
        #expect(throws: CryptoError("X.509: not a DER certificate (DER: BOOLEAN must be one octet, 0x00 or 0xFF)")) {
            try X509Certificate(derEncoded: berTrue)
        }
    }

    @Test func refusesStructuralViolations() throws {
        let key = try PrivateKey.generateP256()
        let pub = try key.publicKey()
        let n = Build.name([(X509OID.commonName, "X")])
        let bc = X509TestCertificates.Extension(oid: X509OID.basicConstraints, critical: true, value: Build.basicConstraints(ca: true))

        #expect(throws: CryptoError("X.509: extensions in a v1 certificate")) {
            try X509Certificate(derEncoded: try Build.build(version: 1, subject: n, issuer: n, subjectKey: pub, extensions: [bc], signer: key))
        }
        #expect(try X509Certificate(derEncoded: try Build.build(version: 1, subject: n, issuer: n, subjectKey: pub, signer: key)).version == 1)
        #expect(throws: CryptoError("X.509: unsupported version")) {
            try X509Certificate(derEncoded: try Build.build(version: 4, subject: n, issuer: n, subjectKey: pub, signer: key))
        }
        #expect(throws: CryptoError("X.509: duplicate extension")) {
            try X509Certificate(derEncoded: try Build.build(subject: n, issuer: n, subjectKey: pub, extensions: [bc, bc], signer: key))
        }
        #expect(throws: CryptoError("X.509: signatureAlgorithm differs from the TBS signature field")) {
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: pub, signer: key, outerAlgorithm: DER.sequence(DER.oid("1.2.840.10045.4.3.3"))))
        }
        #expect(throws: CryptoError("X.509: malformed extension 2.5.29.19")) {
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: pub,
                    extensions: [.init(oid: X509OID.basicConstraints, critical: true, value: [0x30, 0x03, 0x02, 0x01])], signer: key))
        }
        #expect(throws: CryptoError("X.509: malformed extension 2.5.29.35")) {
            // authorityKeyIdentifier with keyIdentifier constructed (A0) instead of primitive (80),
            // the defect of the FIDO conformance tool's fake TPM certificates.
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: pub,
                    extensions: [.init(oid: X509OID.authorityKeyIdentifier, critical: false, value: Hex.decode("3016a014517f22c8e653a57cd54cdd30587e30ff67368c5d")!)],
                    signer: key))
        }
        #expect(throws: CryptoError("X.509: malformed basicConstraints (pathLenConstraint without cA)")) {
            // pathLenConstraint on a non-CA is inconsistent (RFC 5280 §4.2.1.9).
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: pub,
                    extensions: [.init(oid: X509OID.basicConstraints, critical: true, value: Build.basicConstraints(ca: false, pathLength: 1))],
                    signer: key))
        }
        #expect(throws: CryptoError("X.509: malformed extendedKeyUsage")) {
            try X509Certificate(
                derEncoded: try Build.build(
                    subject: n, issuer: n, subjectKey: pub,
                    extensions: [.init(oid: X509OID.extendedKeyUsage, critical: false, value: [0x30, 0x00])], signer: key))
        }
    }

    @Test(arguments: [
        Build.utcTime("2401010000Z"),  // no seconds
        Build.utcTime("240101000000+0100"),  // offset instead of Z
        Build.generalizedTime("20240101000000.5Z"),  // fractional seconds
        Build.utcTime("241301000000Z"),  // month 13
        DER.tlv(0x0C, Array("240101000000Z".utf8)),  // not a time type
    ])
    func refusesMalformedValidityTimes(_ notBefore: [UInt8]) throws {
        let key = try PrivateKey.generateP256()
        let n = Build.name([(X509OID.commonName, "T")])
        let der = try Build.build(subject: n, issuer: n, notBefore: notBefore, subjectKey: try key.publicKey(), signer: key)
        #expect(throws: CryptoError.self) { try X509Certificate(derEncoded: der) }
    }

    @Test func generalizedTimesBeyond2049() throws {
        let key = try PrivateKey.generateP256()
        let n = Build.name([(X509OID.commonName, "T")])
        let der = try Build.build(
            subject: n, issuer: n, notAfter: Build.generalizedTime("30240101000000Z"), subjectKey: try key.publicKey(), signer: key)
        #expect(try X509Certificate(derEncoded: der).notAfter == X509TestVectors.utc(3024, 1, 1))
    }

    @Test func pemErrors() {
        let begin = "-----BEGIN CERTIFICATE-----\n"
        let end = "-----END CERTIFICATE-----\n"
        #expect(throws: CryptoError("PEM: no CERTIFICATE block")) { try X509Certificate.certificates(fromPEM: "hello") }
        #expect(throws: CryptoError("PEM: block is not a CERTIFICATE")) {
            try X509Certificate.certificates(fromPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        #expect(throws: CryptoError("PEM: CERTIFICATE block not terminated")) { try X509Certificate.certificates(fromPEM: begin + "MIIB\n") }
        #expect(throws: CryptoError("PEM: END without BEGIN")) { try X509Certificate.certificates(fromPEM: end) }
        #expect(throws: CryptoError("PEM: malformed base64 in a CERTIFICATE block")) {
            try X509Certificate.certificates(fromPEM: begin + "not base64!\n" + end)
        }
        #expect(throws: CryptoError("PEM: malformed base64 in a CERTIFICATE block")) { try X509Certificate.certificates(fromPEM: begin + end) }
        #expect(throws: CryptoError("X.509: not a DER certificate (DER: expected UNIVERSAL 16 (constructed), found UNIVERSAL 2 (primitive))")) {
            try X509Certificate.certificates(fromPEM: begin + "AgEB\n" + end)
        }
        let huge = String(repeating: "A", count: (1 << 20) + 1)
        #expect(throws: CryptoError("PEM: larger than 1048576 bytes")) { try X509Certificate.certificates(fromPEM: huge) }
    }

    private func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= pattern.count else { return nil }
        for i in 0...(bytes.count - pattern.count) where Array(bytes[i..<(i + pattern.count)]) == pattern {
            return Array(bytes[..<i]) + replacement + Array(bytes[(i + pattern.count)...])
        }
        return nil
    }
}
