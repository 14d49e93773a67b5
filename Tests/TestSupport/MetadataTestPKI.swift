import Crypto
import FIDO
import Foundation
import Tokens
import JSON

/// Small P-256 certificates and signed MDS3 BLOBs for metadata and policy tests (FIDO unit
/// tests and the stack's metadata refresh), built from Crypto's `DER` writer and
/// `PrivateKey.sign` and Tokens' `JWS.sign`.
public enum MetadataTestPKI {
    /// A key and its certificate.
    public struct Issued {
        public let key: PrivateKey
        public let der: [UInt8]
        public let subject: [UInt8]
        public var certificate: X509Certificate { get throws { try X509Certificate(derEncoded: der) } }
        public var base64: String { Data(der).base64EncodedString() }
    }

    /// An AAGUID from its text (a test failure if it is not one).
    public static func aaguid(_ text: String) throws -> AAGUID {
        guard let aaguid = AAGUID(text) else { throw CryptoError("test: not an AAGUID") }
        return aaguid
    }

    public static let ecdsaWithSHA256 = DER.sequence(DER.oid("1.2.840.10045.4.3.2"))

    public static func name(_ cn: String) -> [UInt8] {
        DER.sequence(DER.tlv(0x31, DER.sequence(DER.oid(X509OID.commonName), DER.tlv(0x0C, Array(cn.utf8)))))
    }

    public static func generalizedTime(_ date: Date) -> [UInt8] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return DER.tlv(0x18, Array(formatter.string(from: date).utf8))
    }

    /// A cRLDistributionPoints extension value: one distribution point whose fullName lists `uris`.
    public static func crlDistributionPoints(_ uris: [String]) -> [UInt8] {
        let names = uris.flatMap { DER.tlv(0x86, Array($0.utf8)) }
        return DER.sequence(DER.sequence(DER.tlv(0xA0, DER.tlv(0xA0, names))))
    }

    /// A certificate for `subjectKey`, signed by `signer`; with `crlURIs`, a cRLDistributionPoints
    /// extension naming them.
    public static func certificate(
        subject: [UInt8], issuer: [UInt8], subjectKey: PublicKey, signer: PrivateKey, ca: Bool, serial: UInt8,
        notBefore: Date, notAfter: Date, crlURIs: [String] = [], crlDistributionPointsValue: [UInt8]? = nil
    ) throws -> [UInt8] {
        let basicConstraints = DER.sequence(ca ? [0x01, 0x01, 0xFF] : [])
        // keyUsage: keyCertSign + cRLSign for CAs, digitalSignature for leaves.
        let keyUsage: [UInt8] = ca ? DER.tlv(0x03, [0x01, 0x06]) : DER.tlv(0x03, [0x07, 0x80])
        var list = DER.sequence(DER.oid(X509OID.basicConstraints), [0x01, 0x01, 0xFF], DER.tlv(0x04, basicConstraints))
            + DER.sequence(DER.oid(X509OID.keyUsage), [0x01, 0x01, 0xFF], DER.tlv(0x04, keyUsage))
        if let value = crlDistributionPointsValue ?? (crlURIs.isEmpty ? nil : crlDistributionPoints(crlURIs)) {
            list += DER.sequence(DER.oid(X509OID.cRLDistributionPoints), DER.tlv(0x04, value))
        }
        let extensions = DER.tlv(0xA3, DER.tlv(0x30, list))
        let tbs = DER.sequence(
            DER.tlv(0xA0, DER.tlv(0x02, [0x02])), DER.tlv(0x02, [serial]), ecdsaWithSHA256, issuer,
            DER.sequence(generalizedTime(notBefore), generalizedTime(notAfter)), subject, subjectKey.subjectPublicKeyInfo,
            extensions)
        return DER.sequence(tbs, ecdsaWithSHA256, DER.bitString(try signer.sign(tbs, algorithm: .es256)))
    }

    public static let defaultNotBefore = Date(timeIntervalSince1970: 1_704_067_200)  // 2024-01-01
    public static let defaultNotAfter = Date(timeIntervalSince1970: 2_019_686_400)  // 2034-01-01
    /// Inside the default validity.
    public static let verificationTime = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15

    public static func root(_ cn: String = "MDS Test Root") throws -> Issued {
        let key = try PrivateKey.generateP256()
        let n = name(cn)
        let der = try certificate(
            subject: n, issuer: n, subjectKey: try key.publicKey(), signer: key, ca: true, serial: 1,
            notBefore: defaultNotBefore, notAfter: defaultNotAfter)
        return Issued(key: key, der: der, subject: n)
    }

    public static func issue(
        _ cn: String, by issuer: Issued, ca: Bool = false, notBefore: Date = defaultNotBefore, notAfter: Date = defaultNotAfter,
        serial: UInt8 = 2, crlURIs: [String] = [], crlDistributionPointsValue: [UInt8]? = nil
    ) throws -> Issued {
        let key = try PrivateKey.generateP256()
        let n = name(cn)
        let der = try certificate(
            subject: n, issuer: issuer.subject, subjectKey: try key.publicKey(), signer: issuer.key, ca: ca, serial: serial,
            notBefore: notBefore, notAfter: notAfter, crlURIs: crlURIs, crlDistributionPointsValue: crlDistributionPointsValue)
        return Issued(key: key, der: der, subject: n)
    }

    /// A v2 CRL (RFC 5280 §5.1) of `issuer`, signed with `signer` (by default the issuer's
    /// key), listing the certificates of serial numbers `revoked`.
    public static func crl(
        by issuer: Issued, revoked: [UInt8] = [], thisUpdate: Date = defaultNotBefore, nextUpdate: Date = defaultNotAfter,
        signer: PrivateKey? = nil
    ) throws -> [UInt8] {
        let entries = revoked.map { DER.sequence(DER.tlv(0x02, [$0]), generalizedTime(thisUpdate)) }
        let tbs = DER.sequence(
            DER.tlv(0x02, [0x01]), ecdsaWithSHA256, issuer.subject, generalizedTime(thisUpdate), generalizedTime(nextUpdate),
            entries.isEmpty ? [] : DER.tlv(0x30, entries.flatMap { $0 }))
        return DER.sequence(tbs, ecdsaWithSHA256, DER.bitString(try (signer ?? issuer.key).sign(tbs, algorithm: .es256)))
    }

    // MARK: - BLOBs

    /// A root, an intermediate and a signer, like the FIDO production chain.
    public struct Chain {
        public let root: Issued
        public let intermediate: Issued
        public let signer: Issued

        /// With `crlBase`, the intermediate names `<crlBase>/root.crl` and the signer
        /// `<crlBase>/ca.crl` as their CRL distribution points (serial numbers 2 and 3).
        public init(signerNotAfter: Date = defaultNotAfter, crlBase: String? = nil) throws {
            root = try MetadataTestPKI.root()
            intermediate = try MetadataTestPKI.issue(
                "MDS Test CA", by: root, ca: true, serial: 2, crlURIs: crlBase.map { ["\($0)/root.crl"] } ?? [])
            signer = try MetadataTestPKI.issue(
                "MDS Test Signer", by: intermediate, notAfter: signerNotAfter, serial: 3, crlURIs: crlBase.map { ["\($0)/ca.crl"] } ?? [])
        }

        public var configuration: MetadataBLOB.Configuration { get throws { MetadataBLOB.Configuration(roots: [try root.certificate]) } }
        public var x5c: [String] { [signer.base64, intermediate.base64] }
    }

    /// A signed BLOB with `payload` (a JSON object) and a header carrying `x5c` (or not), plus
    /// any `extraHeader` members.
    public static func blob(
        payload: [String: Any], chain: Chain, x5c: [String]? = nil, includeX5C: Bool = true,
        extraHeader: [String: JSON.JSONValue] = [:], signer: PrivateKey? = nil
    ) throws -> String {
        var parameters = extraHeader
        if includeX5C { parameters["x5c"] = .array((x5c ?? chain.x5c).map { .string($0) }) }
        let header = JWSHeader(algorithm: .es256, type: "JWT", additionalParameters: parameters)
        let bytes = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try JWS.sign(payload: Array(bytes), header: header, key: signer ?? chain.signer.key)
    }

    /// A payload `{legalHeader, no, nextUpdate, entries}`.
    public static func payload(no: Int, entries: [[String: Any]], nextUpdate: String = "2025-07-01") -> [String: Any] {
        ["legalHeader": "Signet test metadata", "no": no, "nextUpdate": nextUpdate, "entries": entries]
    }

    /// An entry for a FIDO2 model with one or more statuses (`(status, effectiveDate)`).
    public static func entry(
        aaguid: String? = nil, keyIdentifiers: [String]? = nil, statuses: [(String, String)],
        roots: [String] = [], description: String = "Test Authenticator", statement: [String: Any]? = nil
    ) -> [String: Any] {
        var e: [String: Any] = [
            "statusReports": statuses.map { ["status": $0.0, "effectiveDate": $0.1] },
            "timeOfLastStatusChange": statuses.last?.1 ?? "2024-01-01",
        ]
        var s: [String: Any] = statement ?? [
            "legalHeader": "https://fidoalliance.org/metadata/metadata-statement-legal-header/",
            "description": description, "authenticatorVersion": 1, "protocolFamily": "fido2", "schema": 3,
            "upv": [["major": 1, "minor": 0]], "authenticationAlgorithms": ["secp256r1_ecdsa_sha256_raw"],
            "publicKeyAlgAndEncodings": ["cose"], "attestationTypes": ["basic_full"],
            "userVerificationDetails": [[["userVerificationMethod": "presence_internal"]]],
            "keyProtection": ["hardware", "secure_element"], "matcherProtection": ["on_chip"],
            "attachmentHint": ["external"], "tcDisplay": [], "attestationRootCertificates": roots,
        ]
        if let aaguid {
            e["aaguid"] = aaguid
            if statement == nil { s["aaguid"] = aaguid }
        }
        if let keyIdentifiers {
            e["attestationCertificateKeyIdentifiers"] = keyIdentifiers
            if statement == nil { s["attestationCertificateKeyIdentifiers"] = keyIdentifiers }
        }
        e["metadataStatement"] = s
        return e
    }
}
