/// The `none` attestation statement format (WebAuthn L3 §8.7): the authenticator or client
/// chose not to attest.
public struct NoneAttestation: AttestationFormatVerifier {
    public let format = "none"

    public init() {}

    /// §8.7 verification procedure: attStmt is the empty map; the attestation type is None.
    public func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
        guard let entries = context.statement.mapValue, entries.isEmpty else {
            throw WebAuthnError(.attestationInvalid, step: "§8.7", "attStmt of a none attestation must be an empty map")
        }
        return AttestationResult(type: .none)
    }
}
