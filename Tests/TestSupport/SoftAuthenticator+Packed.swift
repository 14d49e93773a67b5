import Crypto
import FIDO
import Foundation
import Schema

extension SoftAuthenticator {
    /// A `packed` attestation key (WebAuthn L3 §8.2) and its `x5c`, leaf first, for
    /// ``SoftAuthenticator/create(_:origin:packed:)``.
    public struct PackedAttestation: Sendable {
        public let key: PrivateKey
        public let x5c: [[UInt8]]

        /// A leaf meeting §8.2.1 (version 3; subject C, O, OU "Authenticator Attestation", CN;
        /// CA false; the AAGUID extension, non-critical, with `aaguid`), signed by `issuer`'s key,
        /// or by its own key (self-made: no anchor vouches for it) when `issuer` is nil. Valid
        /// 2024-01-01 … 2034-01-01.
        public init(aaguid: [UInt8], issuer: MetadataTestPKI.Issued? = nil) throws {
            key = try PrivateKey.generateP256()
            func attribute(_ oid: String, _ value: String) -> [UInt8] {
                DER.tlv(0x31, DER.sequence(DER.oid(oid), DER.tlv(oid == X509OID.countryName ? 0x13 : 0x0C, Array(value.utf8))))
            }
            let subject = DER.sequence(
                attribute(X509OID.countryName, "SE"), attribute(X509OID.organizationName, "Signet Test"),
                attribute(X509OID.organizationalUnitName, "Authenticator Attestation"), attribute(X509OID.commonName, "Soft Authenticator"))
            let extensions = DER.tlv(
                0xA3,
                DER.sequence(
                    DER.sequence(DER.oid(X509OID.basicConstraints), [0x01, 0x01, 0xFF], DER.tlv(0x04, DER.sequence())),
                    DER.sequence(DER.oid(X509OID.fidoAAGUID), DER.tlv(0x04, DER.tlv(0x04, aaguid)))))
            let tbs = DER.sequence(
                DER.tlv(0xA0, DER.tlv(0x02, [0x02])), DER.tlv(0x02, [0x03]), MetadataTestPKI.ecdsaWithSHA256, issuer?.subject ?? subject,
                DER.sequence(
                    MetadataTestPKI.generalizedTime(MetadataTestPKI.defaultNotBefore), MetadataTestPKI.generalizedTime(MetadataTestPKI.defaultNotAfter)),
                subject, try key.publicKey().subjectPublicKeyInfo, extensions)
            let signature = try (issuer?.key ?? key).sign(tbs, algorithm: .es256)
            x5c = [DER.sequence(tbs, MetadataTestPKI.ecdsaWithSHA256, DER.bitString(signature))]
        }
    }
}

extension SoftAuthenticator {
    /// The response with a `fido-u2f` attestation (WebAuthn L3 §8.6) by `attestation`'s key,
    /// its certificate as x5c. Use with the zero AAGUID, as U2F clients do.
    public func create(_ options: CreationOptionsJSON, origin: String, u2f attestation: MetadataTestPKI.Issued) throws -> RegistrationResponseJSON {
        try response(options, origin: origin, userVerified: false, userPresent: true) { _, clientData in
            let signed = [0x00] + SHA256.hash(Array(options.rp.id.utf8)) + SHA256.hash(clientData) + credentialID + [0x04] + x + y
            let sig = try attestation.key.sign(signed, algorithm: .es256)
            return ("fido-u2f", .map([(.text("sig"), .bytes(sig)), (.text("x5c"), .array([.bytes(attestation.der)]))]))
        }
    }
}

extension SoftAuthenticator.PackedAttestation {
    /// `{alg: ES256, sig, x5c}`, sig over authenticatorData ‖ SHA-256(clientDataJSON).
    func statement(authData: [UInt8], clientData: [UInt8]) throws -> (fmt: String, attStmt: CBORValue) {
        let sig = try key.sign(authData + SHA256.hash(clientData), algorithm: .es256)
        return ("packed", .map([(.text("alg"), .negative(6)), (.text("sig"), .bytes(sig)), (.text("x5c"), .array(x5c.map { .bytes($0) }))]))
    }
}
