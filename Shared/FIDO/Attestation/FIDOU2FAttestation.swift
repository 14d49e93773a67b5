import Crypto

/// The `fido-u2f` attestation statement format (WebAuthn L3 §8.6): a FIDO U2F authenticator's
/// registration signature, made by its batch attestation key.
///
/// Syntax: `{ x5c: [ attestnCert: bytes ], sig: bytes }`.
///
/// The U2F signature covers only rpIdHash, clientDataHash, the credential ID and the public
/// key; the AAGUID, flags and counter in authenticator data are the client's, unsigned. A U2F
/// device has no AAGUID, so clients write zeros there; with ``requiresZeroAAGUID`` (the default)
/// anything else is refused, so that an unattested AAGUID can never select metadata, trust
/// anchors or an AAGUID allow-list entry. §8.6 itself does not list this check.
public struct FIDOU2FAttestation: AttestationFormatVerifier {
    public let format = "fido-u2f"

    /// Refuse a non-zero AAGUID (see the type's documentation). Default true.
    public var requiresZeroAAGUID: Bool

    public init(requiresZeroAAGUID: Bool = true) {
        self.requiresZeroAAGUID = requiresZeroAAGUID
    }

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // Step 1: attStmt is valid CBOR conforming to the syntax; extract its fields.
        let fields = try AttestationStatementFields(context.statement, allowed: ["x5c", "sig"], step: "§8.6 step 1")
        let sig = try fields.bytes("sig")
        let x5c = try fields.certificateChain()

        // Step 2: x5c has exactly one element, attCert, whose public key is EC P-256.
        guard x5c.count == 1 else {
            throw WebAuthnError(.attestationInvalid, step: "§8.6 step 2", "x5c must hold exactly one certificate")
        }
        let attCert = x5c[0]
        let certificateKey = try AttestationChecks.publicKey(of: attCert, step: "§8.6 step 2")
        guard certificateKey.kind == .ec(.p256) else {
            throw WebAuthnError(.certificateRequirements, step: "§8.6 step 2", "the attestation certificate key must be EC P-256")
        }
        if requiresZeroAAGUID, !context.attestedCredential.aaguid.isZero {
            throw WebAuthnError(.aaguidNotZero, step: "§8.6 step 2", "a fido-u2f attestation must carry the zero AAGUID")
        }

        // Step 3: rpIdHash, credentialId and credentialPublicKey from authenticator data.
        let rpIDHash = context.authenticatorData.rpIDHash
        let credentialID = context.attestedCredential.credentialID
        // Step 4: the COSE key as a raw ANSI X9.62 point, 0x04 ‖ x ‖ y. Only EC2 P-256 keys
        // have that form, which is what U2F authenticators produce.
        let coseKey = context.credentialPublicKey
        guard coseKey.keyType == .ec2, coseKey.algorithm == .es256,
            let x = context.attestedCredential.credentialPublicKey[intKey: -2]?.bytesValue,
            let y = context.attestedCredential.credentialPublicKey[intKey: -3]?.bytesValue,
            x.count == 32, y.count == 32
        else {
            throw WebAuthnError(.attestationInvalid, step: "§8.6 step 4", "the credential public key must be an EC2 P-256 key")
        }
        let publicKeyU2F = [0x04] + x + y

        // Step 5: verificationData = 0x00 ‖ rpIdHash ‖ clientDataHash ‖ credentialId ‖ publicKeyU2F.
        let verificationData = [0x00] + rpIDHash + context.clientDataHash + credentialID + publicKeyU2F
        // Step 6: verify sig with attCert's key, ECDSA with SHA-256.
        guard certificateKey.verify(signature: sig, message: verificationData, algorithm: .es256) else {
            throw WebAuthnError(.attestationSignatureInvalid, step: "§8.6 step 6", "the U2F registration signature does not verify")
        }
        // Step 7 (optional: Basic vs AttCA from external knowledge) is left to metadata.
        // Step 8: Basic (or AttCA / uncertainty), trust path x5c.
        return AttestationResult(type: .basic, trustPath: [attCert.derEncoded])
    }
}
