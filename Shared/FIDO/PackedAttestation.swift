/// The `packed` attestation statement format (WebAuthn L3 §8.2).
///
/// Self attestation (no `x5c`) is verified here. Basic and AttCA attestation (with `x5c`) need
/// X.509 parsing, the §8.2.1 certificate requirements and the id-fido-gen-ce-aaguid extension
/// check; until the Crypto X.509 work lands they are refused with
/// ``WebAuthnError/Code/unsupportedAttestationFormat``, after the statement's syntax has been
/// checked.
public struct PackedAttestation: AttestationFormatVerifier {
    public let format = "packed"

    public init() {}

    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        // §8.2 verification procedure, step 1: attStmt is valid CBOR conforming to the syntax
        // { alg: int, sig: bytes, ? x5c: [+ bytes] } and nothing else.
        guard let entries = context.statement.mapValue else {
            throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "attStmt must be a map")
        }
        var alg: Int?
        var sig: [UInt8]?
        var x5c: [[UInt8]]?
        for entry in entries {
            switch entry.key.textValue {
            case "alg"?:
                alg = entry.value.intValue
                if alg == nil { throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "alg must be an integer") }
            case "sig"?:
                sig = entry.value.bytesValue
                if sig == nil { throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "sig must be a byte string") }
            case "x5c"?:
                guard let certs = entry.value.arrayValue, !certs.isEmpty else {
                    throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "x5c must be a non-empty array")
                }
                var chain: [[UInt8]] = []
                for cert in certs {
                    guard let der = cert.bytesValue else {
                        throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "x5c entries must be byte strings")
                    }
                    chain.append(der)
                }
                x5c = chain
            default:
                throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "unexpected member in a packed attStmt")
            }
        }
        guard let alg, let sig else {
            throw WebAuthnError(.attestationInvalid, step: "§8.2 step 1", "alg and sig are required")
        }

        if x5c != nil {
            // §8.2 step 2 (x5c present): verify sig with attestnCert's public key, check the
            // certificate against §8.2.1 and the AAGUID extension, return Basic/AttCA with the
            // chain as trust path. Needs X.509 — not available yet.
            throw WebAuthnError(
                .unsupportedAttestationFormat, step: "§8.2 step 2", "packed attestation with x5c needs X.509 support")
        }

        // §8.2 step 3 (self attestation): alg matches the credential public key's algorithm …
        guard alg == context.credentialPublicKey.algorithm.rawValue else {
            throw WebAuthnError(
                .attestationAlgorithmMismatch, step: "§8.2 step 3", "alg is not the credential public key's algorithm")
        }
        // … and sig verifies over authenticatorData ‖ clientDataHash with the credential key.
        guard context.credentialPublicKey.verify(signature: sig, message: context.signedData) else {
            throw WebAuthnError(.attestationSignatureInvalid, step: "§8.2 step 3", "self-attestation signature does not verify")
        }
        return AttestationResult(type: .self)
    }
}
