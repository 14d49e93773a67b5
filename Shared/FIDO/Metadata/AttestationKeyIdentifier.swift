import Crypto

/// Attestation certificate key identifiers, as MDS3 entries list them for authenticators
/// without an AAGUID (U2F): RFC 5280 §4.2.1.2 method 1, the SHA-1 of the `subjectPublicKey`
/// BIT STRING's value (without tag, length and unused-bits octet), as lower-case hex.
public enum AttestationKeyIdentifier {
    /// The key identifier of `certificate`'s public key; nil if its SubjectPublicKeyInfo
    /// cannot be read (it always can for a certificate that parsed).
    public static func of(_ certificate: X509Certificate) -> String? {
        of(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo)
    }

    /// The key identifier of a DER SubjectPublicKeyInfo; nil when it is not one.
    public static func of(subjectPublicKeyInfo spki: [UInt8]) -> String? {
        do {
            var outer = X509DERReader(spki)
            var fields = try outer.readSequence()
            try outer.finish()
            _ = try fields.readSequence()  // AlgorithmIdentifier
            let key = try fields.readBitString()
            try fields.finish()
            guard key.unusedBits == 0 else { return nil }
            return Hex.encode(InsecureSHA1.hash(key.bytes))
        } catch {
            return nil
        }
    }

    /// Whether `text` is a well-formed identifier: 40 lower-case hex digits (the MDS3 form).
    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// An `attestationCertificateKeyIdentifiers` array, lower-cased (the format requires lower
    /// case; some statements were published with upper case) and checked to be SHA-1 hex.
    static func normalised(_ json: MetadataJSON) throws(MetadataJSON.Failure) -> [String] {
        var out: [String] = []
        for element in try json.elements() {
            let id = try element.string().lowercased()
            guard isWellFormed(id) else { throw element.fail("not a 40-digit hex key identifier") }
            out.append(id)
        }
        return out
    }
}
