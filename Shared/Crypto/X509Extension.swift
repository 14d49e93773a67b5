/// One certificate extension (RFC 5280 §4.1.2.9), as it appears in the certificate.
public struct X509Extension: Sendable, Hashable {
    /// extnID in dotted form.
    public let oid: String
    /// Whether the extension is marked critical.
    public let isCritical: Bool
    /// The contents of extnValue's OCTET STRING: the DER encoding of the extension's own
    /// type (e.g. `SEQUENCE { cA BOOLEAN, ... }` for basicConstraints). Walk it with
    /// ``X509DERReader``.
    public let value: [UInt8]

    public init(oid: String, isCritical: Bool, value: [UInt8]) {
        self.oid = oid
        self.isCritical = isCritical
        self.value = value
    }
}

/// basicConstraints (RFC 5280 §4.2.1.9).
public struct X509BasicConstraints: Sendable, Hashable {
    /// Whether the subject is a CA.
    public let isCA: Bool
    /// pathLenConstraint: the most non-self-issued intermediates that may follow; nil when absent.
    public let pathLengthConstraint: Int?

    public init(isCA: Bool, pathLengthConstraint: Int?) {
        self.isCA = isCA
        self.pathLengthConstraint = pathLengthConstraint
    }
}

/// keyUsage bits (RFC 5280 §4.2.1.3); `rawValue` bit n is the RFC's bit n.
public struct X509KeyUsage: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let digitalSignature = X509KeyUsage(rawValue: 1 << 0)
    /// Also called contentCommitment.
    public static let nonRepudiation = X509KeyUsage(rawValue: 1 << 1)
    public static let keyEncipherment = X509KeyUsage(rawValue: 1 << 2)
    public static let dataEncipherment = X509KeyUsage(rawValue: 1 << 3)
    public static let keyAgreement = X509KeyUsage(rawValue: 1 << 4)
    public static let keyCertSign = X509KeyUsage(rawValue: 1 << 5)
    public static let cRLSign = X509KeyUsage(rawValue: 1 << 6)
    public static let encipherOnly = X509KeyUsage(rawValue: 1 << 7)
    public static let decipherOnly = X509KeyUsage(rawValue: 1 << 8)
}

/// One GeneralName (RFC 5280 §4.2.1.6), as found in subjectAltName.
public enum X509GeneralName: Sendable, Hashable {
    /// rfc822Name (an e-mail address).
    case email(String)
    /// dNSName.
    case dns(String)
    /// uniformResourceIdentifier.
    case uri(String)
    /// iPAddress: 4 or 16 octets (or 8/32 in name constraints).
    case ipAddress([UInt8])
    /// directoryName. TPM attestation certificates put the TPM manufacturer, model and firmware
    /// version here (``X509OID/tpmManufacturer``, ``X509OID/tpmModel``, ``X509OID/tpmVersion``).
    case directoryName(X509Name)
    /// registeredID, in dotted form.
    case registeredID(String)
    /// otherName: its type-id and the DER encoding of its value (the element inside `[0]`).
    case otherName(typeID: String, value: [UInt8])
    /// x400Address (3) or ediPartyName (5): the GeneralName choice number and the DER encoding
    /// of the whole GeneralName.
    case other(tag: Int, value: [UInt8])
}
