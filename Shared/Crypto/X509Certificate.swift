import COpenSSL
import FoundationEssentials
import Platform

/// An X.509 certificate held by OpenSSL (`X509`), parsed strictly and completely when it is
/// created: attestation x5c chains (packed, fido-u2f, tpm, android-key, android-safetynet,
/// apple), trust anchors, and the FIDO Metadata Service BLOB's x5c.
///
/// Parsing refuses, with a ``CryptoError`` that names the rule and never the content:
/// certificates over ``maximumDERSize``; anything but exactly one DER `Certificate` (BER
/// encodings, trailing data, non-minimal lengths or integers); versions other than 1–3;
/// extensions in a v1/v2 certificate; duplicate extensions; any extension of a type OpenSSL knows
/// (basicConstraints, keyUsage, subjectAltName, authorityKeyIdentifier, certificatePolicies, …)
/// that does not decode; pathLenConstraint without cA; a signature algorithm that differs from the
/// one inside the signed part; validity times that are not `YYMMDDHHMMSSZ` / `YYYYMMDDHHMMSSZ`.
///
/// Every accessor is a stored value computed at parse time, so reading a certificate never
/// fails and never touches OpenSSL state.
public final class X509Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked Sendable: the X509 handle is never mutated after init. Everything OpenSSL caches
    // lazily on an X509 (the decoded extensions, via X509_check_purpose) is populated in init,
    // and the verification code only reads it or takes a reference (X509_up_ref is atomic).
    let handle: OpaquePointer

    /// Certificates larger than this (16 KiB) are refused before OpenSSL sees them.
    public static let maximumDERSize = 16 * 1024
    /// PEM text larger than this (1 MiB) is refused.
    public static let maximumPEMSize = 1 << 20

    /// The certificate's DER encoding, exactly as given.
    public let derEncoded: [UInt8]
    /// 1, 2 or 3.
    public let version: Int
    /// The serial number's INTEGER content octets (big-endian two's complement, as encoded;
    /// some attestation certificates have negative serials).
    public let serialNumber: [UInt8]
    public let subject: X509Name
    public let issuer: X509Name
    public let notBefore: Date
    public let notAfter: Date
    /// The outer signatureAlgorithm, dotted (e.g. 1.2.840.10045.4.3.2 for ecdsa-with-SHA256).
    public let signatureAlgorithmOID: String
    /// The DER SubjectPublicKeyInfo, whatever its algorithm.
    public let subjectPublicKeyInfo: [UInt8]
    /// Every extension, in certificate order.
    public let extensions: [X509Extension]
    /// basicConstraints; nil when the extension is absent.
    public let basicConstraints: X509BasicConstraints?
    /// keyUsage; nil when the extension is absent.
    public let keyUsage: X509KeyUsage?
    /// extendedKeyUsage purposes, dotted; nil when the extension is absent.
    public let extendedKeyUsage: [String]?
    /// subjectAltName entries in order; nil when the extension is absent.
    public let subjectAlternativeNames: [X509GeneralName]?
    /// SHA-256 of ``derEncoded``.
    public let sha256Fingerprint: [UInt8]

    private init(handle: OpaquePointer, der: [UInt8], parsed: Parsed) {
        self.handle = handle
        self.derEncoded = der
        self.version = parsed.version
        self.serialNumber = parsed.serialNumber
        self.subject = parsed.subject
        self.issuer = parsed.issuer
        self.notBefore = parsed.notBefore
        self.notAfter = parsed.notAfter
        self.signatureAlgorithmOID = parsed.signatureAlgorithmOID
        self.subjectPublicKeyInfo = parsed.subjectPublicKeyInfo
        self.extensions = parsed.extensions
        self.basicConstraints = parsed.basicConstraints
        self.keyUsage = parsed.keyUsage
        self.extendedKeyUsage = parsed.extendedKeyUsage
        self.subjectAlternativeNames = parsed.subjectAlternativeNames
        self.sha256Fingerprint = SHA256.hash(der)
    }

    deinit { X509_free(handle) }

    // MARK: - Creating

    /// A certificate from its DER encoding (an x5c entry, a metadata root).
    ///
    /// - Throws: ``CryptoError`` when the bytes are not exactly one well-formed certificate.
    public convenience init(derEncoded der: [UInt8]) throws {
        guard !der.isEmpty else { throw CryptoError("X.509: empty certificate") }
        guard der.count <= Self.maximumDERSize else { throw CryptoError("X.509: certificate larger than \(Self.maximumDERSize) bytes") }
        let serial = try Self.checkStructure(der)
        // Trailing data is refused by checkStructure; decoding the whole keeps OpenSSL's view identical.
        guard let decoded = DERObject.decodeWhole(der, d2i_X509, free: X509_free) else {
            ERR_clear_error()
            throw CryptoError("X.509: not a valid certificate")
        }
        let parsed: Parsed
        do {
            parsed = try Self.parse(decoded, serialNumber: serial)
        } catch {
            X509_free(decoded)
            ERR_clear_error()
            throw error
        }
        self.init(handle: decoded, der: der, parsed: parsed)
    }

    /// A certificate from PEM text holding exactly one `CERTIFICATE` block.
    ///
    /// - Throws: ``CryptoError`` when there is not exactly one block, or it does not parse.
    public convenience init(pem: String) throws {
        let blocks = try Self.pemBlocks(pem)
        guard blocks.count == 1 else { throw CryptoError("PEM: expected one CERTIFICATE block, found \(blocks.count)") }
        try self.init(derEncoded: blocks[0])
    }

    /// Every certificate in PEM text (a bundle of anchors, a chain), in order. Text outside
    /// the blocks is ignored; blocks with another label (a private key, say) are refused.
    ///
    /// - Throws: ``CryptoError`` when there is no block, a block is malformed or a certificate
    ///   does not parse.
    public static func certificates(fromPEM pem: String) throws -> [X509Certificate] {
        try pemBlocks(pem).map { try X509Certificate(derEncoded: $0) }
    }

    // MARK: - Accessors

    /// The subject public key as a ``PublicKey``.
    ///
    /// - Throws: ``CryptoError`` when the key type is not one Signet supports (EC P-256/384/521,
    ///   RSA, Ed25519).
    public var publicKey: PublicKey {
        get throws { try PublicKey.fromSubjectPublicKeyInfo(subjectPublicKeyInfo) }
    }

    /// extnValue's contents and criticality of extension `oid`; nil when absent.
    public func extensionValue(oid: String) -> (value: [UInt8], isCritical: Bool)? {
        extensions.first { $0.oid == oid }.map { ($0.value, $0.isCritical) }
    }

    /// The OIDs of every extension, in certificate order.
    public var extensionOIDs: [String] { extensions.map(\.oid) }

    /// The OIDs of the critical extensions, in certificate order.
    public var criticalExtensionOIDs: [String] { extensions.filter(\.isCritical).map(\.oid) }

    /// Whether `date` falls within notBefore...notAfter, inclusive as RFC 5280 §4.1.2.5 says.
    /// (OpenSSL's path validation treats the notAfter second itself as expired.)
    public func isValid(at date: Date) -> Bool { notBefore <= date && date <= notAfter }

    /// Whether subject and issuer are the same name (a root, or a self-issued certificate).
    public var isSelfIssued: Bool { subject.derEncoded == issuer.derEncoded }

    /// Whether `issuer`'s public key verifies `child`'s signature. Checks the signature only:
    /// not names, validity, basicConstraints or keyUsage (``X509TrustStore`` does those).
    public static func verifySignature(of child: X509Certificate, by issuer: X509Certificate) -> Bool {
        defer { ERR_clear_error() }
        guard let key = X509_get0_pubkey(issuer.handle) else { return false }
        return X509_verify(child.handle, key) == 1
    }

    public var description: String {
        "X509Certificate(sha256: \(Hex.encode(sha256Fingerprint.prefix(8)))…)"
    }

    public static func == (lhs: X509Certificate, rhs: X509Certificate) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }
}

// MARK: - Parsing

extension X509Certificate {
    private struct Parsed {
        var version: Int
        var serialNumber: [UInt8]
        var subject: X509Name
        var issuer: X509Name
        var notBefore: Date
        var notAfter: Date
        var signatureAlgorithmOID: String
        var subjectPublicKeyInfo: [UInt8]
        var extensions: [X509Extension]
        var basicConstraints: X509BasicConstraints?
        var keyUsage: X509KeyUsage?
        var extendedKeyUsage: [String]?
        var subjectAlternativeNames: [X509GeneralName]?
    }

    /// Checks the DER shape before OpenSSL, whose decoder accepts some BER, sees the bytes:
    /// `SEQUENCE { tbsCertificate SEQUENCE, signatureAlgorithm SEQUENCE, signature BIT STRING }`,
    /// well-formed DER throughout. Returns the serial number's content octets.
    private static func checkStructure(_ der: [UInt8]) throws -> [UInt8] {
        do {
            try X509DERReader.validate(der)
            var outer = X509DERReader(der)
            var certificate = try outer.readSequence()
            var tbs = try certificate.readSequence()
            _ = try certificate.readSequence()
            _ = try certificate.readBitString()
            try certificate.finish()
            if var version = try tbs.readOptionalExplicit(0) {
                _ = try version.readInt()
                try version.finish()
            }
            return try tbs.readInteger()
        } catch let error as CryptoError {
            throw CryptoError("X.509: not a DER certificate (\(error.description))")
        }
    }

    private static func parse(_ x: OpaquePointer, serialNumber: [UInt8]) throws -> Parsed {
        let rawVersion = X509_get_version(x)
        guard (0...2).contains(rawVersion) else { throw CryptoError("X.509: unsupported version") }

        // Signature algorithm: outer and TBS copies must agree (RFC 5280 §4.1.1.2).
        var signature: UnsafePointer<ASN1_BIT_STRING>?
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_get0_signature(&signature, &algorithm, x)
        guard let algorithm, let tbsAlgorithm = X509_get0_tbs_sigalg(x), X509_ALGOR_cmp(algorithm, tbsAlgorithm) == 0 else {
            throw CryptoError("X.509: signatureAlgorithm differs from the TBS signature field")
        }
        var algorithmObject: OpaquePointer?
        X509_ALGOR_get0(&algorithmObject, nil, nil, algorithm)
        guard let algorithmObject else { throw CryptoError("X.509: missing signature algorithm") }

        guard let subjectName = X509_get_subject_name(x), let issuerName = X509_get_issuer_name(x) else {
            throw CryptoError("X.509: missing names")
        }
        guard let before = X509_get0_notBefore(x), let after = X509_get0_notAfter(x) else {
            throw CryptoError("X.509: missing validity")
        }

        guard let spki = X509_get_X509_PUBKEY(x) else { throw CryptoError("X.509: missing public key") }
        var spkiOut: UnsafeMutablePointer<UInt8>?
        let spkiLength = i2d_X509_PUBKEY(spki, &spkiOut)
        guard spkiLength > 0, let spkiOut else { throw CryptoError("X.509: public key cannot be encoded") }
        let spkiBytes = Array(UnsafeBufferPointer(start: spkiOut, count: Int(spkiLength)))
        CRYPTO_free(spkiOut, #fileID, #line)

        let extensions = try readExtensions(x)
        guard extensions.isEmpty || rawVersion == 2 else { throw CryptoError("X.509: extensions in a v\(rawVersion + 1) certificate") }
        guard Set(extensions.map(\.oid)).count == extensions.count else { throw CryptoError("X.509: duplicate extension") }
        // Decodes and caches the extensions OpenSSL understands; EXFLAG_INVALID marks one it
        // could not decode (or inconsistent basicConstraints). Done here, once, so that later
        // concurrent readers never race on the cache.
        // Every extension of a type OpenSSL knows must decode, whether or not path validation
        // looks at it (certificatePolicies, say).
        if let oid = undecodableExtension(x) { throw CryptoError("X.509: malformed extension \(oid)") }
        guard X509_check_purpose(x, -1, 0) == 1, X509_get_extension_flags(x) & UInt32(EXFLAG_INVALID) == 0 else {
            ERR_clear_error()
            throw CryptoError("X.509: malformed or inconsistent extensions")
        }

        return Parsed(
            version: Int(rawVersion) + 1,
            serialNumber: serialNumber,
            subject: try X509Name.from(subjectName),
            issuer: try X509Name.from(issuerName),
            notBefore: try date(before),
            notAfter: try date(after),
            signatureAlgorithmOID: try X509OID.dotted(algorithmObject),
            subjectPublicKeyInfo: spkiBytes,
            extensions: extensions,
            basicConstraints: try basicConstraints(x),
            keyUsage: keyUsage(x),
            extendedKeyUsage: try extendedKeyUsage(extensions),
            subjectAlternativeNames: try subjectAlternativeNames(x))
    }

    /// A validity time as a Date. RFC 5280 §4.1.2.5: UTCTime `YYMMDDHHMMSSZ` or
    /// GeneralizedTime `YYYYMMDDHHMMSSZ`, nothing else.
    private static func date(_ time: UnsafePointer<ASN1_TIME>) throws -> Date {
        let length = Int(ASN1_STRING_length(time))
        let type = ASN1_STRING_type(time)
        guard (type == V_ASN1_UTCTIME && length == 13) || (type == V_ASN1_GENERALIZEDTIME && length == 15),
            let data = ASN1_STRING_get0_data(time), data[length - 1] == UInt8(ascii: "Z"),
            (0..<(length - 1)).allSatisfy({ data[$0] >= UInt8(ascii: "0") && data[$0] <= UInt8(ascii: "9") })
        else { throw CryptoError("X.509: malformed validity time") }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            throw CryptoError("X.509: malformed validity time")
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    // MARK: - PEM

    /// The DER contents of every `CERTIFICATE` block.
    static func pemBlocks(_ pem: String) throws -> [[UInt8]] {
        guard pem.utf8.count <= maximumPEMSize else { throw CryptoError("PEM: larger than \(maximumPEMSize) bytes") }
        var blocks: [[UInt8]] = []
        var body: String?
        // Split on Character.isNewline: "\r\n" is one Character, so splitting on "\n" would miss it.
        for rawLine in pem.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if let collected = body {
                if line == "-----END CERTIFICATE-----" {
                    guard !collected.isEmpty, let der = Data(base64Encoded: collected) else {
                        throw CryptoError("PEM: malformed base64 in a CERTIFICATE block")
                    }
                    blocks.append(Array(der))
                    body = nil
                } else if line.hasPrefix("-----") {
                    throw CryptoError("PEM: CERTIFICATE block not terminated")
                } else {
                    body = collected + line
                }
            } else if line.hasPrefix("-----BEGIN ") {
                guard line == "-----BEGIN CERTIFICATE-----" else { throw CryptoError("PEM: block is not a CERTIFICATE") }
                body = ""
            } else if line.hasPrefix("-----END ") {
                throw CryptoError("PEM: END without BEGIN")
            }
        }
        guard body == nil else { throw CryptoError("PEM: CERTIFICATE block not terminated") }
        guard !blocks.isEmpty else { throw CryptoError("PEM: no CERTIFICATE block") }
        return blocks
    }
}
