import Crypto

extension FIDOPolicy {
    /// Applies the policy to a verified registration.
    ///
    /// Rules in order: algorithm, user verification, resident key, attestation, AAGUID
    /// lists, MDS3 revocation, certification level. The first broken rule refuses.
    ///
    /// The authenticator's metadata is found by AAGUID, or for an all-zero AAGUID (U2F) by the
    /// key identifier of the attestation certificate. Revoked or compromised models are refused
    /// whenever `metadata` has an entry for them, whatever the rest of the policy says.
    ///
    /// - Parameters:
    ///   - registration: Output of ``RegistrationVerifier/verify(_:expectedChallenge:verificationTime:)``.
    ///   - metadata: The MDS3 metadata; nil when the deployment has none (then revocation is not
    ///     checked and a minimum certification level cannot be met).
    ///   - residentKey: The client's `credProps.rk` extension output, if it sent one. It is
    ///     unsigned client data: enough to refuse a client that says "not discoverable", not a
    ///     proof that the credential is.
    public func evaluate(
        registration: VerifiedRegistration, metadata: MetadataService?, residentKey: Bool? = nil
    ) -> PolicyDecision {
        func refuse(_ code: PolicyRefusal.Code, _ rule: String, _ detail: String) -> PolicyDecision {
            .refused(PolicyRefusal(code, rule: rule, detail))
        }

        guard allowedAlgorithms.contains(registration.algorithm) else {
            return refuse(.algorithmNotAllowed, "/allowedAlgorithms", "the credential's algorithm is not allowed")
        }
        if userVerification == .required, !registration.userVerified {
            return refuse(.userVerificationRequired, "/userVerification", "user verification is required and UV is not set")
        }
        if self.residentKey == .required, residentKey != true {
            return refuse(.residentKeyRequired, "/residentKey", "a discoverable credential is required and the client did not report one")
        }

        switch registration.attestationType {
        case .none:
            if attestation.required {
                return refuse(.attestationRequired, "/attestation/required", "attestation is required and none was given")
            }
            if !attestation.acceptNone {
                return refuse(.attestationRequired, "/attestation/acceptNone", "none attestation is not accepted")
            }
        case .self:
            if attestation.required {
                return refuse(.selfAttestationNotAllowed, "/attestation/required", "attestation is required; self attestation proves no model")
            }
            if !attestation.acceptSelf {
                return refuse(.selfAttestationNotAllowed, "/attestation/acceptSelf", "self attestation is not accepted")
            }
        case .basic, .attCA, .anonCA:
            // RegistrationVerifier only returns these after a trust evaluator validated the
            // path; an empty path here would be a caller bug, and must not pass as attested.
            if attestation.required, registration.attestationTrustPath.isEmpty {
                return refuse(.attestationRequired, "/attestation/required", "attestation is required and has no trust path")
            }
        }

        if disallowedAAGUIDs.contains(registration.aaguid) {
            return refuse(.aaguidNotAllowed, "/disallowedAAGUIDs", "the authenticator model is disallowed")
        }
        if let allowed = allowedAAGUIDs, !allowed.contains(registration.aaguid) {
            return refuse(.aaguidNotAllowed, "/allowedAAGUIDs", "the authenticator model is not in the allow list")
        }

        let entry = metadata.flatMap { Self.metadataEntry(for: registration, in: $0) }
        if let entry, entry.isRevokedOrCompromised {
            return refuse(.authenticatorRevoked, "/metadata/status", "MDS3 reports this authenticator model revoked or compromised")
        }
        if let minimum = minimumCertificationLevel {
            guard let level = entry?.certificationLevel else {
                return refuse(.certificationLevel, "/minimumCertificationLevel", "no FIDO certification is known for this authenticator model")
            }
            guard level >= minimum else {
                return refuse(.certificationLevel, "/minimumCertificationLevel", "the model's FIDO certification level is below the minimum")
            }
        }
        return .accepted(metadata: entry)
    }

    /// The MDS3 entry for the registering model: by AAGUID, else by the attestation
    /// certificate's key identifier.
    static func metadataEntry(for registration: VerifiedRegistration, in metadata: MetadataService) -> MetadataEntry? {
        if !registration.aaguid.isZero, let entry = metadata.entry(for: registration.aaguid) { return entry }
        guard let leaf = registration.attestationTrustPath.first, let certificate = try? X509Certificate(derEncoded: leaf) else {
            return nil
        }
        return metadata.entry(forAttestationCertificate: certificate)
    }
}
