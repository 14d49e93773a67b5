import COpenSSL

// MARK: - FIDO helpers

extension X509Certificate {
    /// The AAGUID in id-fido-gen-ce-aaguid (1.3.6.1.4.1.45724.1.1.4); nil when the extension is
    /// absent. WebAuthn §8.2.1 (packed) and §8.3.1 (tpm): when present, it must equal the
    /// AAGUID in authenticator data — the caller compares.
    ///
    /// - Throws: ``CryptoError`` when the extension is critical (the spec forbids it) or is not
    ///   an OCTET STRING of 16 bytes.
    public func fidoAAGUID() throws -> [UInt8]? {
        guard let ext = extensions.first(where: { $0.oid == X509OID.fidoAAGUID }) else { return nil }
        guard !ext.isCritical else { throw CryptoError("X.509: the FIDO AAGUID extension must not be critical") }
        var reader = X509DERReader(ext.value)
        let aaguid = try reader.readOctetString()
        try reader.finish()
        guard aaguid.count == 16 else { throw CryptoError("X.509: the FIDO AAGUID extension is not 16 bytes") }
        return aaguid
    }
}

// MARK: - Reading extensions at parse time

extension X509Certificate {
    static func readExtensions(_ x: OpaquePointer) throws -> [X509Extension] {
        let count = X509_get_ext_count(x)
        guard count >= 0, count <= 64 else { throw CryptoError("X.509: too many extensions") }
        var out: [X509Extension] = []
        out.reserveCapacity(Int(count))
        for i in 0..<count {
            guard let ext = X509_get_ext(x, i), let object = X509_EXTENSION_get_object(ext),
                let data = X509_EXTENSION_get_data(ext)
            else { throw CryptoError("X.509: malformed extension") }
            let length = Int(ASN1_STRING_length(data))
            let value: [UInt8] =
                if length > 0, let p = ASN1_STRING_get0_data(data) { Array(UnsafeBufferPointer(start: p, count: length)) } else { [] }
            out.append(X509Extension(oid: try X509OID.dotted(object), isCritical: X509_EXTENSION_get_critical(ext) != 0, value: value))
        }
        return out
    }

    /// The OID of the first extension of a type OpenSSL knows (basicConstraints, keyUsage,
    /// authorityKeyIdentifier, certificatePolicies, …) whose value it cannot decode; nil if none.
    static func undecodableExtension(_ x: OpaquePointer) -> String? {
        defer { ERR_clear_error() }
        for i in 0..<X509_get_ext_count(x) {
            guard let ext = X509_get_ext(x, i), let method = X509V3_EXT_get(ext) else { continue }
            guard let decoded = X509V3_EXT_d2i(ext) else {
                return X509_EXTENSION_get_object(ext).flatMap { try? X509OID.dotted($0) }
            }
            if let item = method.pointee.it {
                ASN1_item_free(OpaquePointer(decoded), item())
            } else if let free = method.pointee.ext_free {
                free(decoded)
            }
        }
        return nil
    }

    /// Decodes extension `nid` with OpenSSL. nil when absent; throws when present but undecodable.
    private static func decodedExtension(_ x: OpaquePointer, _ nid: Int32) throws -> UnsafeMutableRawPointer? {
        var critical: Int32 = 0
        let decoded = X509_get_ext_d2i(x, nid, &critical, nil)
        // critical: -1 absent, -2 present more than once, 0/1 present (NULL then means undecodable).
        if decoded == nil && critical != -1 {
            ERR_clear_error()
            throw CryptoError("X.509: malformed extension")
        }
        return decoded
    }

    static func basicConstraints(_ x: OpaquePointer) throws -> X509BasicConstraints? {
        guard let raw = try decodedExtension(x, NID_basic_constraints) else { return nil }
        let bc = raw.assumingMemoryBound(to: BASIC_CONSTRAINTS.self)
        defer { BASIC_CONSTRAINTS_free(bc) }
        var pathLength: Int?
        if let pathlen = bc.pointee.pathlen {
            var v: Int64 = 0
            guard ASN1_INTEGER_get_int64(&v, pathlen) == 1, v >= 0 else {
                ERR_clear_error()
                throw CryptoError("X.509: malformed basicConstraints")
            }
            pathLength = Int(v)
        }
        // RFC 5280 §4.2.1.9: pathLenConstraint only with cA TRUE (OpenSSL 3.0 accepts it).
        guard bc.pointee.ca != 0 || pathLength == nil else {
            throw CryptoError("X.509: malformed basicConstraints (pathLenConstraint without cA)")
        }
        return X509BasicConstraints(isCA: bc.pointee.ca != 0, pathLengthConstraint: pathLength)
    }

    static func keyUsage(_ x: OpaquePointer) -> X509KeyUsage? {
        // Relies on X509_check_purpose having cached the extensions (done in parse).
        guard X509_get_extension_flags(x) & UInt32(EXFLAG_KUSAGE) != 0 else { return nil }
        let bits = X509_get_key_usage(x)
        let map: [(UInt32, X509KeyUsage)] = [
            (UInt32(KU_DIGITAL_SIGNATURE), .digitalSignature), (UInt32(KU_NON_REPUDIATION), .nonRepudiation),
            (UInt32(KU_KEY_ENCIPHERMENT), .keyEncipherment), (UInt32(KU_DATA_ENCIPHERMENT), .dataEncipherment),
            (UInt32(KU_KEY_AGREEMENT), .keyAgreement), (UInt32(KU_KEY_CERT_SIGN), .keyCertSign),
            (UInt32(KU_CRL_SIGN), .cRLSign), (UInt32(KU_ENCIPHER_ONLY), .encipherOnly),
            (UInt32(KU_DECIPHER_ONLY), .decipherOnly),
        ]
        var usage: X509KeyUsage = []
        for (bit, flag) in map where bits & bit != 0 { usage.insert(flag) }
        return usage
    }

    /// ExtKeyUsageSyntax ::= SEQUENCE SIZE (1..MAX) OF KeyPurposeId
    static func extendedKeyUsage(_ extensions: [X509Extension]) throws -> [String]? {
        guard let ext = extensions.first(where: { $0.oid == X509OID.extendedKeyUsage }) else { return nil }
        do {
            var outer = X509DERReader(ext.value)
            var list = try outer.readSequence()
            try outer.finish()
            var oids: [String] = []
            while !list.isAtEnd { oids.append(try list.readObjectIdentifier()) }
            guard !oids.isEmpty else { throw CryptoError("empty") }
            return oids
        } catch {
            throw CryptoError("X.509: malformed extendedKeyUsage")
        }
    }

    static func subjectAlternativeNames(_ x: OpaquePointer) throws -> [X509GeneralName]? {
        guard let raw = try decodedExtension(x, NID_subject_alt_name) else { return nil }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        let count = OPENSSL_sk_num(names)
        guard count >= 0, count <= 256 else { throw CryptoError("X.509: malformed subjectAltName") }
        var out: [X509GeneralName] = []
        for i in 0..<count {
            guard let element = OPENSSL_sk_value(names, i) else { throw CryptoError("X.509: malformed subjectAltName") }
            out.append(try generalName(element.assumingMemoryBound(to: GENERAL_NAME.self)))
        }
        return out
    }

    private static func generalName(_ name: UnsafeMutablePointer<GENERAL_NAME>) throws -> X509GeneralName {
        let d = name.pointee.d
        func text(_ s: UnsafeMutablePointer<ASN1_STRING>?) throws -> String {
            guard let s, let string = String(validating: bytes(s), as: UTF8.self) else {
                throw CryptoError("X.509: malformed subjectAltName")
            }
            return string
        }
        switch name.pointee.type {
        case GEN_EMAIL: return .email(try text(d.rfc822Name))
        case GEN_DNS: return .dns(try text(d.dNSName))
        case GEN_URI: return .uri(try text(d.uniformResourceIdentifier))
        case GEN_IPADD:
            guard let ip = d.iPAddress else { throw CryptoError("X.509: malformed subjectAltName") }
            return .ipAddress(bytes(ip))
        case GEN_DIRNAME:
            guard let dn = d.directoryName else { throw CryptoError("X.509: malformed subjectAltName") }
            return .directoryName(try X509Name.from(dn))
        case GEN_RID:
            guard let rid = d.registeredID else { throw CryptoError("X.509: malformed subjectAltName") }
            return .registeredID(try X509OID.dotted(rid))
        case GEN_OTHERNAME:
            guard let other = d.otherName, let typeID = other.pointee.type_id, let value = other.pointee.value else {
                throw CryptoError("X.509: malformed subjectAltName")
            }
            var out: UnsafeMutablePointer<UInt8>?
            let n = i2d_ASN1_TYPE(value, &out)
            guard n > 0, let out else { throw CryptoError("X.509: malformed subjectAltName") }
            defer { CRYPTO_free(out, #fileID, #line) }
            return .otherName(typeID: try X509OID.dotted(typeID), value: Array(UnsafeBufferPointer(start: out, count: Int(n))))
        default:
            var out: UnsafeMutablePointer<UInt8>?
            let n = i2d_GENERAL_NAME(name, &out)
            guard n > 0, let out else { throw CryptoError("X.509: malformed subjectAltName") }
            defer { CRYPTO_free(out, #fileID, #line) }
            return .other(tag: Int(name.pointee.type), value: Array(UnsafeBufferPointer(start: out, count: Int(n))))
        }
    }

    private static func bytes(_ s: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(s))
        guard length > 0, let p = ASN1_STRING_get0_data(s) else { return [] }
        return Array(UnsafeBufferPointer(start: p, count: length))
    }
}
