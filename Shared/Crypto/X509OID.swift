import COpenSSL

/// Object identifiers, in dotted form, that FIDO attestation and MDS3 code looks for.
public enum X509OID {
    // MARK: - Name attributes (X.520)

    public static let commonName = "2.5.4.3"
    public static let serialNumber = "2.5.4.5"
    public static let countryName = "2.5.4.6"
    public static let stateOrProvinceName = "2.5.4.8"
    public static let organizationName = "2.5.4.10"
    public static let organizationalUnitName = "2.5.4.11"

    // MARK: - Certificate extensions (RFC 5280 §4.2)

    public static let subjectKeyIdentifier = "2.5.29.14"
    public static let keyUsage = "2.5.29.15"
    public static let subjectAltName = "2.5.29.17"
    public static let basicConstraints = "2.5.29.19"
    public static let cRLDistributionPoints = "2.5.29.31"
    public static let certificatePolicies = "2.5.29.32"
    public static let authorityKeyIdentifier = "2.5.29.35"
    public static let extendedKeyUsage = "2.5.29.37"

    // MARK: - FIDO and platform attestation

    /// id-fido-gen-ce-aaguid: the AAGUID, an OCTET STRING in the extension's OCTET STRING
    /// (WebAuthn §8.2.1). Must not be critical.
    public static let fidoAAGUID = "1.3.6.1.4.1.45724.1.1.4"
    /// id-fido-u2f-ce-transports: the transports a U2F authenticator supports.
    public static let fidoU2FTransports = "1.3.6.1.4.1.45724.2.1.1"
    /// Android Key Attestation's KeyDescription.
    public static let androidKeyDescription = "1.3.6.1.4.1.11129.2.1.17"
    /// Apple anonymous attestation's nonce (WebAuthn §8.8).
    public static let appleNonce = "1.2.840.113635.100.8.2"
    /// tcg-kp-AIKCertificate: the EKU a TPM attestation certificate must have (WebAuthn §8.3.1).
    public static let tcgKpAIKCertificate = "2.23.133.8.3"
    /// TPM SAN directoryName attributes (TCG EK Credential Profile §3.2.9).
    public static let tpmManufacturer = "2.23.133.2.1"
    public static let tpmModel = "2.23.133.2.2"
    public static let tpmVersion = "2.23.133.2.3"

    // MARK: - Conversions

    /// The dotted form of an `ASN1_OBJECT`, never its short name.
    static func dotted(_ object: OpaquePointer) throws -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let needed = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard needed > 0 else { throw CryptoError("X.509: malformed object identifier") }
        if Int(needed) >= buffer.count {
            // Arcs beyond 64 bits are legal ASN.1; keep a bound so garbage stays cheap.
            guard needed < 1024 else { throw CryptoError("X.509: object identifier too long") }
            buffer = [CChar](repeating: 0, count: Int(needed) + 1)
            guard OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1) == needed else {
                throw CryptoError("X.509: malformed object identifier")
            }
        }
        return String(decoding: buffer.prefix(Int(needed)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
