import FoundationEssentials

/// The relying-party choices the attestation formats leave open, in one place, for
/// ``AttestationFormatRegistry/standard(_:)``. The defaults are the strict production ones.
public struct AttestationFormatOptions: Sendable, Hashable {
    /// `tpm`: accept the TPM manufacturer identifiers of the FIDO conformance tools
    /// (`FFFFF1D0`) and the W3C test vectors (`00000000`). Only for conformance and test
    /// deployments. Default false.
    public var acceptsTestTPMManufacturers: Bool
    /// `android-key`: read origin/purpose from the TEE-enforced list only. Default true.
    public var androidKeyRequiresTrustedEnvironment: Bool
    /// `android-safetynet`: refuse `ctsProfileMatch: false`. Default true.
    public var safetyNetRequiresCTSProfileMatch: Bool
    /// `android-safetynet`: check `timestampMs`. Default true.
    public var safetyNetChecksTimestamp: Bool
    /// `android-safetynet`: how far `timestampMs` may be from the verification time. Default 60 s.
    public var safetyNetTimestampTolerance: TimeInterval
    /// `fido-u2f`: refuse a non-zero AAGUID. Default true.
    public var u2fRequiresZeroAAGUID: Bool

    public init(
        acceptsTestTPMManufacturers: Bool = false, androidKeyRequiresTrustedEnvironment: Bool = true,
        safetyNetRequiresCTSProfileMatch: Bool = true, safetyNetChecksTimestamp: Bool = true,
        safetyNetTimestampTolerance: TimeInterval = 60, u2fRequiresZeroAAGUID: Bool = true
    ) {
        self.acceptsTestTPMManufacturers = acceptsTestTPMManufacturers
        self.androidKeyRequiresTrustedEnvironment = androidKeyRequiresTrustedEnvironment
        self.safetyNetRequiresCTSProfileMatch = safetyNetRequiresCTSProfileMatch
        self.safetyNetChecksTimestamp = safetyNetChecksTimestamp
        self.safetyNetTimestampTolerance = safetyNetTimestampTolerance
        self.u2fRequiresZeroAAGUID = u2fRequiresZeroAAGUID
    }
}
