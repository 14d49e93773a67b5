import Foundation
@testable import Crypto

/// Builds small ECDSA P-256 certificates from DER parts, for cases no real vector has
/// (a non-CA intermediate, an unknown critical extension, malformed fields). Uses only the
/// module's `DER` writer and `PrivateKey.sign`.
enum X509TestCertificates {
    struct Extension {
        var oid: String
        var critical: Bool
        var value: [UInt8]
    }

    /// A CA or leaf with its key.
    struct Issued {
        let key: PrivateKey
        let der: [UInt8]
        var certificate: X509Certificate { get throws { try X509Certificate(derEncoded: der) } }
    }

    static let ecdsaWithSHA256 = DER.sequence(DER.oid("1.2.840.10045.4.3.2"))

    // MARK: - Parts

    static func seq(_ items: [[UInt8]]) -> [UInt8] { DER.tlv(0x30, items.flatMap { $0 }) }

    /// A Name with one attribute per RDN, UTF8String values; `multiValued` puts them all in one RDN.
    static func name(_ attributes: [(String, String)], multiValued: Bool = false) -> [UInt8] {
        let atvs = attributes.map { DER.sequence(DER.oid($0.0), DER.tlv(0x0C, Array($0.1.utf8))) }
        if multiValued { return seq([DER.tlv(0x31, atvs.flatMap { $0 })]) }
        return seq(atvs.map { DER.tlv(0x31, $0) })
    }

    static func utcTime(_ s: String) -> [UInt8] { DER.tlv(0x17, Array(s.utf8)) }
    static func generalizedTime(_ s: String) -> [UInt8] { DER.tlv(0x18, Array(s.utf8)) }

    static func basicConstraints(ca: Bool, pathLength: Int? = nil) -> [UInt8] {
        seq([ca ? [0x01, 0x01, 0xFF] : [], pathLength.map { DER.tlv(0x02, [UInt8($0)]) } ?? []])
    }

    /// keyUsage from RFC bit numbers (0 digitalSignature … 8 decipherOnly), DER-minimal.
    static func keyUsage(_ bits: [Int]) -> [UInt8] {
        let highest = bits.max() ?? 0
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for bit in bits { bytes[bit / 8] |= 0x80 >> UInt8(bit % 8) }
        return DER.tlv(0x03, [UInt8(7 - highest % 8)] + bytes)
    }

    static func extendedKeyUsage(_ oids: [String]) -> [UInt8] { seq(oids.map(DER.oid)) }

    // MARK: - Certificates

    /// DER of a certificate signed by `signer`.
    static func build(
        version: Int = 3, serial: [UInt8] = [0x01], subject: [UInt8], issuer: [UInt8],
        notBefore: [UInt8] = utcTime("240101000000Z"), notAfter: [UInt8] = utcTime("340101000000Z"),
        subjectKey: PublicKey, extensions: [Extension] = [], signer: PrivateKey,
        tbsAlgorithm: [UInt8] = ecdsaWithSHA256, outerAlgorithm: [UInt8] = ecdsaWithSHA256
    ) throws -> [UInt8] {
        var tbs: [[UInt8]] = []
        if version != 1 { tbs.append(DER.tlv(0xA0, DER.tlv(0x02, [UInt8(version - 1)]))) }
        tbs.append(DER.tlv(0x02, serial))
        tbs.append(tbsAlgorithm)
        tbs.append(issuer)
        tbs.append(seq([notBefore, notAfter]))
        tbs.append(subject)
        tbs.append(subjectKey.subjectPublicKeyInfo)
        if !extensions.isEmpty {
            let list = extensions.map { ext in
                seq([DER.oid(ext.oid), ext.critical ? [0x01, 0x01, 0xFF] : [], DER.tlv(0x04, ext.value)])
            }
            tbs.append(DER.tlv(0xA3, seq(list)))
        }
        let tbsDER = seq(tbs)
        let signature = try signer.sign(tbsDER, algorithm: .es256)
        return seq([tbsDER, outerAlgorithm, DER.bitString(signature)])
    }

    /// A self-signed root CA.
    static func root(_ cn: String = "Test Root", pathLength: Int? = nil) throws -> Issued {
        let key = try PrivateKey.generateP256()
        let n = name([(X509OID.commonName, cn)])
        let der = try build(
            subject: n, issuer: n, subjectKey: try key.publicKey(),
            extensions: [
                Extension(oid: X509OID.basicConstraints, critical: true, value: basicConstraints(ca: true, pathLength: pathLength)),
                Extension(oid: X509OID.keyUsage, critical: true, value: keyUsage([5, 6])),
            ], signer: key)
        return Issued(key: key, der: der)
    }

    /// A certificate issued by `issuer`; a CA when `ca` is true.
    static func issue(
        _ cn: String, by issuer: Issued, ca: Bool, pathLength: Int? = nil, extra: [Extension] = [],
        keyUsageBits: [Int]? = nil, serial: [UInt8] = [0x02]
    ) throws -> Issued {
        let key = try PrivateKey.generateP256()
        let issuerName = try issuer.certificate.subject.derEncoded
        var extensions = [Extension(oid: X509OID.basicConstraints, critical: true, value: basicConstraints(ca: ca, pathLength: pathLength))]
        extensions.append(Extension(oid: X509OID.keyUsage, critical: true, value: keyUsage(keyUsageBits ?? (ca ? [5, 6] : [0]))))
        extensions += extra
        let der = try build(
            serial: serial, subject: name([(X509OID.commonName, cn)]), issuer: issuerName, subjectKey: try key.publicKey(),
            extensions: extensions, signer: issuer.key)
        return Issued(key: key, der: der)
    }
}
