import COpenSSL

/// An X.501 distinguished name (a certificate's subject or issuer, or a SAN `directoryName`)
/// as its ordered relative distinguished names.
///
/// Order is the DER order (most significant first, usually C before CN), not the reversed
/// order of RFC 4514 strings.
public struct X509Name: Sendable, Hashable {
    /// One attribute type and value, e.g. (2.5.4.3, "Yubico U2F Root CA Serial 457200631").
    public struct Attribute: Sendable, Hashable {
        /// The attribute type in dotted form.
        public let oid: String
        /// The value as UTF-8. String types (UTF8String, PrintableString, IA5String, BMPString,
        /// UniversalString, T61String) are converted by OpenSSL; a value of another ASN.1 type
        /// (a SEQUENCE, say) is given as `#` followed by the lower-case hex of its DER encoding,
        /// as RFC 4514 §2.4 does for values it cannot show as text.
        public let value: String

        public init(oid: String, value: String) {
            self.oid = oid
            self.value = value
        }
    }

    /// The RDNs in DER order; each holds one or more attributes (multi-valued RDNs are rare).
    public let relativeDistinguishedNames: [[Attribute]]

    /// The DER encoding of the Name (as used to match an issuer to a subject).
    public let derEncoded: [UInt8]

    public init(relativeDistinguishedNames: [[Attribute]], derEncoded: [UInt8]) {
        self.relativeDistinguishedNames = relativeDistinguishedNames
        self.derEncoded = derEncoded
    }

    /// Every attribute, flattened in DER order.
    public var attributes: [Attribute] { relativeDistinguishedNames.flatMap { $0 } }

    /// Whether the name has no RDNs (TPM attestation certificates have an empty subject).
    public var isEmpty: Bool { relativeDistinguishedNames.isEmpty }

    /// Every value of attribute `oid`, in DER order.
    public func values(forOID oid: String) -> [String] {
        attributes.filter { $0.oid == oid }.map(\.value)
    }

    /// The first value of attribute `oid` in DER order.
    public func firstValue(forOID oid: String) -> String? {
        attributes.first { $0.oid == oid }?.value
    }

    /// commonName (2.5.4.3), the first in DER order.
    public var commonName: String? { firstValue(forOID: X509OID.commonName) }
    /// organizationName (2.5.4.10).
    public var organization: String? { firstValue(forOID: X509OID.organizationName) }
    /// organizationalUnitName (2.5.4.11). FIDO attestation certificates must carry
    /// "Authenticator Attestation" here (WebAuthn §8.2.1).
    public var organizationalUnit: String? { firstValue(forOID: X509OID.organizationalUnitName) }
    /// countryName (2.5.4.6).
    public var country: String? { firstValue(forOID: X509OID.countryName) }

    // MARK: - From OpenSSL

    /// Copies an `X509_NAME` owned by someone else.
    static func from(_ name: OpaquePointer) throws -> X509Name {
        let count = X509_NAME_entry_count(name)
        guard count >= 0, count <= 256 else { throw CryptoError("X.509: name has too many attributes") }
        var rdns: [[Attribute]] = []
        var lastSet: Int32 = -1
        for i in 0..<count {
            guard let entry = X509_NAME_get_entry(name, i), let object = X509_NAME_ENTRY_get_object(entry),
                let data = X509_NAME_ENTRY_get_data(entry)
            else { throw CryptoError("X.509: malformed name attribute") }
            let attribute = Attribute(oid: try X509OID.dotted(object), value: try string(from: data))
            let set = X509_NAME_ENTRY_set(entry)
            if set == lastSet, !rdns.isEmpty {
                rdns[rdns.count - 1].append(attribute)
            } else {
                rdns.append([attribute])
                lastSet = set
            }
        }
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d_X509_NAME(name, &out)
        guard n >= 0, let out else { throw CryptoError("X.509: name cannot be encoded") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return X509Name(relativeDistinguishedNames: rdns, derEncoded: Array(UnsafeBufferPointer(start: out, count: Int(n))))
    }

    /// An attribute value as UTF-8 (see ``Attribute/value``).
    static func string(from data: UnsafePointer<ASN1_STRING>) throws -> String {
        let type = ASN1_STRING_type(data)
        if type == V_ASN1_SEQUENCE || type == V_ASN1_SET || type == V_ASN1_OTHER {
            // OpenSSL keeps these types as their whole encoding: exactly RFC 4514's "#hex" form.
            let length = Int(ASN1_STRING_length(data))
            guard length > 0, let p = ASN1_STRING_get0_data(data) else { throw CryptoError("X.509: malformed name attribute") }
            return "#" + Hex.encode(Array(UnsafeBufferPointer(start: p, count: length)))
        }
        var utf8: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&utf8, data)
        guard n >= 0, let utf8 else {
            // A string type whose bytes are not valid for it (bad UTF-8, odd-length BMPString).
            ERR_clear_error()
            throw CryptoError("X.509: malformed name attribute")
        }
        defer { CRYPTO_free(utf8, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(n)), as: UTF8.self)
    }
}
