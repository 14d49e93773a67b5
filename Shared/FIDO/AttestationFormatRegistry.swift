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

    /// Every WebAuthn L3 §8 format with the strict production options: `none`, `packed`,
    /// `tpm`, `android-key`, `android-safetynet`, `fido-u2f` and `apple`.
    ///
    /// Formats with a trust path (everything but `none` and packed self attestation) are only
    /// accepted by a ``RegistrationVerifier`` that has a trust evaluator, e.g.
    /// ``TrustAnchorEvaluator``.
    public static let standard = AttestationFormatRegistry.standard(AttestationFormatOptions())

    /// Every WebAuthn L3 §8 format, with `options` (e.g. test TPM manufacturers for a
    /// conformance deployment).
    public static func standard(_ options: AttestationFormatOptions) -> AttestationFormatRegistry {
        AttestationFormatRegistry([
            NoneAttestation(),
            PackedAttestation(),
            TPMAttestation(acceptsTestManufacturers: options.acceptsTestTPMManufacturers),
            AndroidKeyAttestation(requiresTrustedEnvironment: options.androidKeyRequiresTrustedEnvironment),
            AndroidSafetyNetAttestation(
                requiresCTSProfileMatch: options.safetyNetRequiresCTSProfileMatch, checksTimestamp: options.safetyNetChecksTimestamp,
                timestampTolerance: options.safetyNetTimestampTolerance),
            FIDOU2FAttestation(requiresZeroAAGUID: options.u2fRequiresZeroAAGUID),
            AppleAttestation(),
        ])
    }

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
