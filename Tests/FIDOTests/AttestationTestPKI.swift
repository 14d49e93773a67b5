import Crypto
import FIDO
import Foundation
import Testing

/// Builds attestation certificates and contexts for the attestation-format tests: a P-256
/// test CA, leaves with exactly the subject and extensions a test needs, and an
/// ``AttestationContext`` over a ``TestAuthenticator`` credential. Uses only Crypto's DER writer
/// and `PrivateKey.sign`.
enum AttestationTestPKI {
    struct Extension {
        var oid: String
        var critical = false
        var value: [UInt8]
    }

    /// A certificate with its key.
    struct Issued {
        let key: PrivateKey
        let der: [UInt8]
        var certificate: X509Certificate { get throws { try X509Certificate(derEncoded: der) } }
        var name: [UInt8] { get throws { try certificate.subject.derEncoded } }
    }

    /// Certificates are valid 2024-01-01 … 2034-01-01; tests verify at 2025-06-01.
    static let verificationTime = Date(timeIntervalSince1970: 1_748_736_000)
    static let ecdsaWithSHA256 = DER.sequence(DER.oid("1.2.840.10045.4.3.2"))

    /// A P-384 key, for "the key is not P-256" cases (PrivateKey only generates P-256).
    static let p384PEM = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDcGT154Af4YKuLi7WX
        ppwCt9UJMOsR+hmeykREIXA5/pV/xmaEo8KLWHm4fRvrutuhZANiAAT9kqtIeOPw
        /jiSHWrWveIR5FH2iOt7unC0EYnKvCt75CBh96YXJDUXwK+uzBGslRGYRMDXo2p2
        SjfQfWZXND1uRnibf7FiOz5Wcm5Xow46kjiJgy9etavilvr46hlOLQ8=
        -----END PRIVATE KEY-----
        """

    /// An RSA-2048 key, for RSA attestation keys (PrivateKey only generates P-256). Test data.
    static let rsaPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCLEA4MZALma1CW
        dH/obLE4jbwtozdCRofJQaDMDAYnOoiy7NabOT+PR8n5itapb/3TNJ2u/AQJMj/Y
        sDbgHm2UB4rw6YTCNSdzxSz6kxrkla8ayulkF7SVMpxsiNeudv+iJwgWut7QTeSB
        u2ZrHNJOieKjYzZJ2ryneoTmyenCUVYw8jyfTwz0ma7CQXkjd5G3KGvs1hEUDtFj
        uzYCeYoWmWAYJCi5JmOmfGUlZTNGfq7q1YHxJ30dIB3TdhTFFZoxXHz4fcV0gmVG
        RvnOJn69q/r2fGZiOk91Cnx1ONYpFonpVQ8gqgpOM7WIFbzyOhWKmw/Yew7ojwTF
        WLrJgyE1AgMBAAECggEADfU0k8XODLakxhU3aWrPdu+y/ZmuSDawFmFB9HkYfQOB
        CQSAnd/nI0h/W062MReOkI5tbUzaUtn6UpONTn1/XiZLqdamfp+7MAGQfC4buunT
        Q4suVd+TPo5v6OzrSRWknu/v/egPyTSoROU8aG/iJAPu/ZtNragI236OrGOD1P8T
        GM8ujGojrdkvO3P+0ivpQpzR89xuO3YqSJdwPGSr62ZfLhIeKYjbDxIwkJE0okhA
        UugoZ4vzPWOJqVYAvnBWdSnUg4e2JyTL9DnpO5NGfI0q3BjAG+rU/TNseEJBcSgS
        PpsjFLDolad2dggYnbYqul8GKNVBenKkia1riOJcgQKBgQC+hAX6L4RNRh5DHokS
        gCOPFbSCqiUv0ebhxjklVdIP2FSranBp7KvreCQ8NvbqC+FkgcKuVObfWGsxL+sC
        MwMDxZGy4v+9+lb3BtvyI/XttsqfEaN5wMNuaXXdmk8WjykOEYfw8qj1qIi6RaaY
        CKYbr8int1a2ChGi/FPh2BigkQKBgQC63IwUh5Uxydiz7HLOOuwzQd42SnWkyN+P
        JeLcJGhDXduu+rVe61bgK/XyLwr/2azViOOvbbFyXLBKjUuiPLkeutyMYrIw7htu
        hO4gIAMvqWnnowOR7T0+6ci0gXPDDIUhS1Uvnxlkt7lMdhhVLX9pD3K6BIV5LqfD
        iKaeofNIZQKBgQCpnIxdwnP8/9HtW4AZMm918ZL1SVk2C5+LnZg+vvr3FFe9DFPs
        WcJtLlbELQMCN3WAr22NGxU3/lXgQpLtMFEcyIYARsv8bKWD411pY86MxdH6cA+k
        U5Mp90Xx9nE22llopv7p6n+1xUeE3oGElR6dQ5BWkIjoJGqzOgXL6UFzoQKBgHfz
        l+Cd4IIjhn6JbHFCldmZkOHdDoQHhqtHsMeMf3mvSJScz8zs2cnxrmIXHMJ8o1w4
        EaDNk7lMEsboyQKOZG97mJRtzuFmGCnsH0h0BFeWMyvFE0ebuVMnk/V7nCo7YUKs
        LzTwtsZWwhZ5QMl8+WshxY3v1RajgoIcuIjggWGZAoGBAJLka9EoFSmv3AwopirD
        4txViygaX2xTwbEDbOmEOrojba+sWS6GmW0iL92tQq0yRxRq8ShLnyKst7bjdi7B
        yum0OE2QtKncHrszVGckWaoQCO5KGMh8Lezz4bu8lG6E6WeiUXvSTS87mlBI+QFi
        AS/4ra04BDJDnflTSYOoaMmR
        -----END PRIVATE KEY-----
        """

    // MARK: - DER parts

    static func seq(_ items: [[UInt8]]) -> [UInt8] { DER.tlv(0x30, items.flatMap { $0 }) }
    static func octetString(_ bytes: [UInt8]) -> [UInt8] { DER.tlv(0x04, bytes) }
    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var v = value
        repeat {
            bytes.insert(UInt8(v & 0xFF), at: 0)
            v >>= 8
        } while v > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return DER.tlv(0x02, bytes)
    }

    /// A Name, one attribute per RDN (or all in one RDN); C is a PrintableString, the rest
    /// UTF8String. An empty list is the empty Name.
    static func name(_ attributes: [(String, String)], multiValued: Bool = false) -> [UInt8] {
        let atvs = attributes.map { oid, value in
            DER.sequence(DER.oid(oid), DER.tlv(oid == X509OID.countryName ? 0x13 : 0x0C, Array(value.utf8)))
        }
        if multiValued { return seq([DER.tlv(0x31, atvs.flatMap { $0 })]) }
        return seq(atvs.map { DER.tlv(0x31, $0) })
    }

    /// The §8.2.1 subject: C, O, OU = "Authenticator Attestation", CN.
    static let packedSubject: [(String, String)] = [
        (X509OID.countryName, "SE"), (X509OID.organizationName, "Signet Test"),
        (X509OID.organizationalUnitName, "Authenticator Attestation"), (X509OID.commonName, "Signet Test Authenticator"),
    ]

    // MARK: - Extension values

    static func basicConstraints(ca: Bool) -> Extension {
        Extension(oid: X509OID.basicConstraints, critical: true, value: seq([ca ? [0x01, 0x01, 0xFF] : []]))
    }

    static func keyUsageCA() -> Extension {
        // keyCertSign (5) and cRLSign (6): 0x06 = 00000110 with 1 unused bit.
        Extension(oid: X509OID.keyUsage, critical: true, value: DER.tlv(0x03, [0x01, 0x06]))
    }

    static func aaguid(_ bytes: [UInt8], critical: Bool = false) -> Extension {
        Extension(oid: X509OID.fidoAAGUID, critical: critical, value: octetString(bytes))
    }

    static func extendedKeyUsage(_ oids: [String]) -> Extension {
        Extension(oid: X509OID.extendedKeyUsage, value: seq(oids.map(DER.oid)))
    }

    /// subjectAltName with one directoryName (`[4] EXPLICIT Name`).
    static func directoryNameSAN(_ attributes: [(String, String)]) -> Extension {
        Extension(oid: X509OID.subjectAltName, critical: true, value: seq([DER.tlv(0xA4, name(attributes, multiValued: true))]))
    }

    /// subjectAltName with dNSNames (`[2] IA5String`).
    static func dnsSAN(_ names: [String]) -> Extension {
        Extension(oid: X509OID.subjectAltName, value: seq(names.map { DER.tlv(0x82, Array($0.utf8)) }))
    }

    /// Apple's nonce extension: `SEQUENCE { [1] EXPLICIT OCTET STRING }`.
    static func appleNonce(_ nonce: [UInt8]) -> Extension {
        Extension(oid: X509OID.appleNonce, value: seq([DER.tlv(0xA1, octetString(nonce))]))
    }

    /// One entry of an Android AuthorizationList.
    enum Authorization {
        case purposes([Int])
        case allApplications
        case origin(Int)

        var encoded: [UInt8] {
            switch self {
            // [1] EXPLICIT SET OF INTEGER
            case .purposes(let values): DER.tlv(0xA1, DER.tlv(0x31, values.flatMap(integer)))
            // [600] EXPLICIT NULL: tag 0xBF 0x84 0x58
            case .allApplications: [0xBF, 0x84, 0x58] + DER.length(2) + DER.null
            // [702] EXPLICIT INTEGER: tag 0xBF 0x85 0x3E
            case .origin(let value): [0xBF, 0x85, 0x3E] + DER.length(integer(value).count) + integer(value)
            }
        }
    }

    /// A KeyDescription extension (attestation version 3, TEE security level).
    static func keyDescription(challenge: [UInt8], software: [Authorization] = [], tee: [Authorization]) -> Extension {
        let value = seq([
            integer(3), DER.tlv(0x0A, [0x01]), integer(4), DER.tlv(0x0A, [0x01]), octetString(challenge), octetString([]),
            seq(software.map(\.encoded)), seq(tee.map(\.encoded)),
        ])
        return Extension(oid: X509OID.androidKeyDescription, value: value)
    }

    static let teeGeneratedSigningKey: [Authorization] = [.purposes([2]), .origin(0)]

    // MARK: - Certificates

    /// DER of a certificate signed (ES256) by `signer`. Version 1 certificates carry no
    /// extensions.
    static func build(
        version: Int = 3, serial: [UInt8] = [0x01], subject: [UInt8], issuer: [UInt8], notBefore: String = "240101000000Z",
        notAfter: String = "340101000000Z", subjectKey: PublicKey, extensions: [Extension] = [], signer: PrivateKey
    ) throws -> [UInt8] {
        var tbs: [[UInt8]] = []
        if version != 1 { tbs.append(DER.tlv(0xA0, DER.tlv(0x02, [UInt8(version - 1)]))) }
        tbs.append(DER.tlv(0x02, serial))
        tbs.append(ecdsaWithSHA256)
        tbs.append(issuer)
        tbs.append(seq([DER.tlv(0x17, Array(notBefore.utf8)), DER.tlv(0x17, Array(notAfter.utf8))]))
        tbs.append(subject)
        tbs.append(subjectKey.subjectPublicKeyInfo)
        if !extensions.isEmpty {
            let list = extensions.map { ext in
                seq([DER.oid(ext.oid), ext.critical ? [0x01, 0x01, 0xFF] : [], octetString(ext.value)])
            }
            tbs.append(DER.tlv(0xA3, seq(list)))
        }
        let tbsDER = seq(tbs)
        return seq([tbsDER, ecdsaWithSHA256, DER.bitString(try signer.sign(tbsDER, algorithm: .es256))])
    }

    /// A self-signed root CA.
    static func root(_ commonName: String = "Signet Attestation Test Root", notAfter: String = "340101000000Z") throws -> Issued {
        let key = try PrivateKey.generateP256()
        let subject = name([(X509OID.commonName, commonName)])
        let der = try build(
            subject: subject, issuer: subject, notAfter: notAfter, subjectKey: try key.publicKey(),
            extensions: [basicConstraints(ca: true), keyUsageCA()], signer: key)
        return Issued(key: key, der: der)
    }

    /// An intermediate CA issued by `issuer`.
    static func intermediate(_ commonName: String, by issuer: Issued) throws -> Issued {
        let key = try PrivateKey.generateP256()
        let der = try build(
            serial: [0x02], subject: name([(X509OID.commonName, commonName)]), issuer: try issuer.name,
            subjectKey: try key.publicKey(), extensions: [basicConstraints(ca: true), keyUsageCA()], signer: issuer.key)
        return Issued(key: key, der: der)
    }

    /// A leaf issued by `issuer`, for `key` (a fresh P-256 key by default).
    static func leaf(
        subject: [(String, String)] = packedSubject, by issuer: Issued, key: PrivateKey? = nil, version: Int = 3,
        extensions: [Extension] = [basicConstraints(ca: false)], notAfter: String = "340101000000Z"
    ) throws -> Issued {
        let key = try key ?? PrivateKey.generateP256()
        let der = try build(
            version: version, serial: [0x03], subject: name(subject), issuer: try issuer.name, notAfter: notAfter,
            subjectKey: try key.publicKey(), extensions: version == 1 ? [] : extensions, signer: issuer.key)
        return Issued(key: key, der: der)
    }

    // MARK: - Contexts

    /// A credential, its authenticator data, a client data hash, and contexts over them.
    struct Fixture {
        let authenticator: TestAuthenticator
        let clientDataJSON: [UInt8]
        let authData: [UInt8]

        init(aaguid: [UInt8] = Array(repeating: 0xA1, count: 16)) throws {
            authenticator = try TestAuthenticator(aaguid: aaguid)
            clientDataJSON = TestAuthenticator.clientData(type: "webauthn.create", challenge: Array(repeating: 0x5A, count: 32))
            authData = authenticator.authenticatorData(flags: TestAuthenticator.up, signCount: 0, attested: true)
        }

        var clientDataHash: [UInt8] { SHA256.hash(clientDataJSON) }
        /// authenticatorData ‖ clientDataHash.
        var signedData: [UInt8] { authData + clientDataHash }
        var aaguid: [UInt8] { authenticator.aaguid }

        /// The context a format verifier receives for `statement`.
        func context(format: String, statement: CBORValue, authData: [UInt8]? = nil, time: Date = verificationTime) throws -> AttestationContext {
            let data = try AuthenticatorData(bytes: authData ?? self.authData)
            guard let credential = data.attestedCredentialData else { throw CryptoError("no attested credential data") }
            let key = try COSEKey(credential.credentialPublicKey, bytes: credential.credentialPublicKeyBytes)
            return AttestationContext(
                format: format, statement: statement, authenticatorData: data, attestedCredential: credential, credentialPublicKey: key,
                clientDataHash: clientDataHash, verificationTime: time)
        }

        /// A full registration response for `fmt`/`statement`.
        func response(format: String, statement: CBORValue) -> RegistrationResponse {
            RegistrationResponse(
                clientDataJSON: clientDataJSON,
                attestationObject: TestAuthenticator.attestationObject(fmt: format, attStmt: statement, authData: authData), transports: [])
        }

        /// A verifier for `example.org` with `evaluator`.
        func verifier(
            options: AttestationFormatOptions = AttestationFormatOptions(), evaluator: (any AttestationTrustEvaluator)?
        ) -> RegistrationVerifier {
            RegistrationVerifier(
                relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: false,
                attestationFormats: .standard(options), trustEvaluator: evaluator)
        }

        var challenge: [UInt8] { Array(repeating: 0x5A, count: 32) }
    }

    /// A CBOR map with text keys.
    static func statement(_ members: [(String, CBORValue)]) -> CBORValue {
        .map(members.map { (key: CBORValue.text($0.0), value: $0.1) })
    }

    /// `x5c` as CBOR.
    static func x5c(_ certificates: [Issued]) -> CBORValue { .array(certificates.map { .bytes($0.der) }) }
}

/// Runs `body` and returns the ``WebAuthnError`` it throws (nil if it returns; any other error
/// is recorded as an issue).
func attestationError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> WebAuthnError? {
    do {
        try body()
        return nil
    } catch let error as WebAuthnError {
        return error
    } catch {
        Issue.record("not a WebAuthnError: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
