/// The attestation statement formats a relying party verifies, by `fmt` identifier.
///
/// Lookup is an exact, case-sensitive match on the identifier (WebAuthn L3 §7.1 step 21);
/// an identifier with no verifier yields ``WebAuthnError/Code/unsupportedAttestationFormat``.
public struct AttestationFormatRegistry: Sendable {
    private var verifiers: [String: any AttestationFormatVerifier]

    /// A registry of `verifiers`; a later verifier for the same format replaces an earlier one.
    public init(_ verifiers: [any AttestationFormatVerifier]) {
        var map: [String: any AttestationFormatVerifier] = [:]
        for v in verifiers { map[v.format] = v }
        self.verifiers = map
    }

    /// `none` and `packed` (self attestation). Formats that need X.509 are added as they land.
    public static let standard = AttestationFormatRegistry([NoneAttestation(), PackedAttestation()])

    /// Adds or replaces the verifier for `verifier.format`.
    public mutating func register(_ verifier: any AttestationFormatVerifier) {
        verifiers[verifier.format] = verifier
    }

    /// The verifier for `format`, if one is registered.
    public func verifier(for format: String) -> (any AttestationFormatVerifier)? {
        // Identifiers are printable US-ASCII (checked when the attestation object is parsed), so
        // String equality here is byte equality.
        verifiers[format]
    }

    /// The registered format identifiers, sorted.
    public var formats: [String] { verifiers.keys.sorted() }
}
