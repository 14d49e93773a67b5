import Crypto
import FoundationEssentials

/// Verifies a registration response: WebAuthn L3 §7.1 up to and including attestation
/// verification, in the specification's order, each failing with its own
/// ``WebAuthnError/Code``.
///
/// A pure function of its inputs (the response, the challenge issued, this policy and the
/// verification time). Out of scope: steps 1–4 (the client call), 20 (extension outputs:
/// returned in ``VerifiedRegistration/extensions`` for the caller's policy), 26 (the credential
/// ID must not be registered yet: a database check) and 27+ (storing the record).
///
/// Attestation formats are verified by the ``AttestationFormatVerifier`` registered for `fmt`
/// in ``attestationFormats`` (by default every WebAuthn L3 §8 format). Statements with a
/// trust path (x5c) are trusted only when a ``trustEvaluator`` validates it; an untrusted one is
/// refused or counted as `none`, as ``untrustedAttestation`` says.
public struct RegistrationVerifier: Sendable {
    /// What to do with an attestation whose trust path does not validate (WebAuthn L3 §7.1
    /// steps 23–24 and the step after storing: "SHOULD fail the registration ceremony", or, "if
    /// permitted by policy", register it as an unattested credential).
    public enum UntrustedAttestation: Sendable, Hashable {
        /// Fail the ceremony with the evaluator's error (the default; a policy that requires
        /// attestation).
        case refuse
        /// Register the credential as attestation type `none` with an empty trust path: the
        /// chain proves no model, so nothing downstream may treat it as basic, AttCA or AnonCA.
        /// The reason is kept in ``VerifiedRegistration/untrustedAttestation``.
        case treatAsNone
    }


    /// The relying party (RP IDs, origins, cross-origin policy).
    public var relyingParty: RelyingParty
    /// Whether the UV flag must be set (`userVerification: "required"`).
    public var requiresUserVerification: Bool
    /// Whether the UP flag must be set. True except for conditional create (`mediation: "conditional"`).
    public var requiresUserPresence: Bool
    /// The algorithms offered in `pubKeyCredParams`.
    public var allowedAlgorithms: [COSEAlgorithm]
    /// Acceptable `clientData.type` values. Default `webauthn.create`.
    public var clientDataTypes: [String]
    /// Verifiers by attestation statement format.
    public var attestationFormats: AttestationFormatRegistry
    /// Attestation types the policy accepts (e.g. drop `.none` and `.self` when attestation is required).
    public var allowedAttestationTypes: Set<AttestationType>
    /// Validates trust paths (§7.1 steps 23–24). Without one, no trust path is trusted.
    public var trustEvaluator: (any AttestationTrustEvaluator)?
    /// What happens to an attestation whose trust path is not trusted. Default ``UntrustedAttestation/refuse``.
    public var untrustedAttestation: UntrustedAttestation

    public init(
        relyingParty: RelyingParty, requiresUserVerification: Bool, requiresUserPresence: Bool = true,
        allowedAlgorithms: [COSEAlgorithm] = COSEAlgorithm.defaultAllowed, clientDataTypes: [String] = ["webauthn.create"],
        attestationFormats: AttestationFormatRegistry = .standard,
        allowedAttestationTypes: Set<AttestationType> = Set(AttestationType.allCases),
        trustEvaluator: (any AttestationTrustEvaluator)? = nil, untrustedAttestation: UntrustedAttestation = .refuse
    ) {
        self.relyingParty = relyingParty
        self.requiresUserVerification = requiresUserVerification
        self.requiresUserPresence = requiresUserPresence
        self.allowedAlgorithms = allowedAlgorithms
        self.clientDataTypes = clientDataTypes
        self.attestationFormats = attestationFormats
        self.allowedAttestationTypes = allowedAttestationTypes
        self.trustEvaluator = trustEvaluator
        self.untrustedAttestation = untrustedAttestation
    }

    /// Verifies `response`.
    ///
    /// - Parameters:
    ///   - response: The registration response, base64url-decoded.
    ///   - expectedChallenge: The challenge issued for this ceremony.
    ///   - verificationTime: When certificates must be valid (pinned in tests).
    /// - Returns: The credential to store.
    /// - Throws: ``WebAuthnError`` naming the first failed step.
    public func verify(
        _ response: RegistrationResponse, expectedChallenge: [UInt8], verificationTime: Date = Date()
    ) throws(WebAuthnError) -> VerifiedRegistration {
        // Steps 5–6: UTF-8 decode and parse clientDataJSON.
        let clientData: CollectedClientData
        do {
            clientData = try CollectedClientData(bytes: response.clientDataJSON)
        } catch {
            throw error.at("§7.1 steps 5–6")
        }
        // Steps 7–10: type, challenge, origin, crossOrigin/topOrigin.
        try relyingParty.verify(clientData, types: clientDataTypes, challenge: expectedChallenge, steps: .registration)
        // Step 11: hash of clientDataJSON.
        let clientDataHash = SHA256.hash(response.clientDataJSON)
        // Step 12: CBOR-decode the attestation object into fmt, authData and attStmt.
        let attestation: AttestationObject
        do {
            attestation = try AttestationObject(bytes: response.attestationObject, requiringConsistentBackupFlags: false)
        } catch {
            throw error.at("§7.1 step 12")
        }
        let authData = attestation.authenticatorData
        // Step 13: rpIdHash.
        guard let rpID = relyingParty.rpID(matching: authData.rpIDHash) else {
            throw WebAuthnError(.rpIDHashMismatch, step: "§7.1 step 13", "rpIdHash is not SHA-256 of an expected RP ID")
        }
        // Step 14: UP (unless conditional create).
        if requiresUserPresence, !authData.userPresent {
            throw WebAuthnError(.userNotPresent, step: "§7.1 step 14", "the UP flag is not set")
        }
        // Step 15: UV when required.
        if requiresUserVerification, !authData.userVerified {
            throw WebAuthnError(.userVerificationRequired, step: "§7.1 step 15", "the UV flag is not set")
        }
        // Step 16: BS only with BE. Steps 17–18 (BE/BS policy) are the caller's: both are returned.
        guard authData.hasConsistentBackupFlags else {
            throw WebAuthnError(.backupStateInconsistent, step: "§7.1 step 16", "BS is set but BE is not")
        }
        // Step 19: the credential public key's algorithm is one of pubKeyCredParams.
        guard let credential = authData.attestedCredentialData else {
            throw WebAuthnError(.attestedCredentialDataMissing, step: "§7.1 step 19", "the AT flag is not set")
        }
        let key = try credentialPublicKey(credential)
        // Step 20: extension outputs are returned for the caller's policy.

        // Step 21: the attestation statement format, by case-sensitive match on fmt.
        guard let formatVerifier = attestationFormats.verifier(for: attestation.format) else {
            throw WebAuthnError(.unsupportedAttestationFormat, step: "§7.1 step 21", "no verifier for this attestation format")
        }
        // Step 22: the format's verification procedure over attStmt, authData and the hash.
        let context = AttestationContext(
            format: attestation.format, statement: attestation.statement, authenticatorData: authData,
            attestedCredential: credential, credentialPublicKey: key, clientDataHash: clientDataHash,
            verificationTime: verificationTime)
        var result: AttestationResult
        do {
            result = try formatVerifier.verify(context)
        } catch {
            throw error.at("§7.1 step 22 (\(error.step))")
        }
        // Steps 23–24: is the attestation acceptable, and does its trust path chain to an anchor?
        guard allowedAttestationTypes.contains(result.type) else {
            throw WebAuthnError(.attestationTypeNotAllowed, step: "§7.1 step 24", "attestation type not accepted by policy")
        }
        var untrusted: WebAuthnError? = nil
        if !result.trustPath.isEmpty, let failure = trustFailure(result, context: context) {
            guard untrustedAttestation == .treatAsNone else { throw failure }
            // §7.1, the step after storing: a statement that verified but is not trustworthy
            // SHOULD fail the ceremony; policy MAY register the credential with no proof of its model. It is
            // `none`, not self: a self attestation is signed with the credential key, this
            // signature is by a key no anchor vouches for. An empty trust path, so that nothing
            // downstream (policy, metadata lookups by certificate) takes the chain as evidence.
            guard allowedAttestationTypes.contains(.none) else { throw failure }
            untrusted = failure
            result = AttestationResult(type: .none)
        }
        // Step 25: credentialId length — enforced when authData was parsed (step 12).

        return VerifiedRegistration(
            credentialID: credential.credentialID, credentialPublicKey: key, aaguid: credential.aaguid,
            signCount: authData.signCount, flags: authData.flags, attestationFormat: attestation.format,
            attestationType: result.type, attestationTrustPath: result.trustPath, untrustedAttestation: untrusted,
            transports: response.transports, extensions: authData.extensions, rpID: rpID, origin: clientData.origin,
            topOrigin: clientData.topOrigin)
    }

    /// §7.1 steps 23–24 for a trust path: nil when ``trustEvaluator`` validates it, else why not.
    private func trustFailure(_ result: AttestationResult, context: AttestationContext) -> WebAuthnError? {
        guard let trustEvaluator else {
            return WebAuthnError(.attestationNotTrusted, step: "§7.1 step 23", "no trust anchors configured for this attestation")
        }
        do {
            try trustEvaluator.evaluate(result, context: context)
            return nil
        } catch {
            return error.at("§7.1 steps 23–24")
        }
    }

    /// §7.1 step 19: the key's `alg` must be allowed, then the key must parse.
    private func credentialPublicKey(_ credential: AuthenticatorData.AttestedCredentialData) throws(WebAuthnError) -> COSEKey {
        // Check the policy on the declared alg first, so that an algorithm Signet could not
        // verify anyway but was not offered reads as "not allowed".
        if let alg = credential.credentialPublicKey[intKey: 3]?.intValue, !allowedAlgorithms.contains(COSEAlgorithm(alg)) {
            throw WebAuthnError(.algorithmNotAllowed, step: "§7.1 step 19", "algorithm not in pubKeyCredParams")
        }
        let key: COSEKey
        do {
            key = try COSEKey(credential.credentialPublicKey, bytes: credential.credentialPublicKeyBytes)
        } catch {
            throw WebAuthnError(cose: error, step: "§7.1 step 19")
        }
        guard allowedAlgorithms.contains(key.algorithm) else {
            throw WebAuthnError(.algorithmNotAllowed, step: "§7.1 step 19", "algorithm not in pubKeyCredParams")
        }
        return key
    }
}

/// The outcome of a successful registration: the credential record to create.
public struct VerifiedRegistration: Sendable {
    /// The credential ID (from authenticator data).
    public let credentialID: [UInt8]
    /// The credential public key (store ``COSEKey/bytes``).
    public let credentialPublicKey: COSEKey
    /// The authenticator model.
    public let aaguid: AAGUID
    /// The initial signature counter.
    public let signCount: UInt32
    /// The authenticator data flags.
    public let flags: AuthenticatorData.Flags
    /// `fmt`.
    public let attestationFormat: String
    /// The attestation type established by the format, and trusted: `none` for an untrusted
    /// trust path under ``RegistrationVerifier/UntrustedAttestation/treatAsNone``.
    public let attestationType: AttestationType
    /// The attestation trust path (DER certificates, leaf first), validated by the trust
    /// evaluator; empty for none/self and for an untrusted attestation counted as none.
    public let attestationTrustPath: [[UInt8]]
    /// Why the statement's trust path was not trusted, when it was counted as `none`
    /// (``RegistrationVerifier/UntrustedAttestation/treatAsNone``); nil otherwise.
    public let untrustedAttestation: WebAuthnError?
    /// `response.transports`, unchanged.
    public let transports: [String]
    /// Authenticator extension outputs (§7.1 step 20 is the caller's).
    public let extensions: CBORValue?
    /// The RP ID the credential is scoped to.
    public let rpID: String
    /// `clientData.origin`.
    public let origin: String
    /// `clientData.topOrigin`, for cross-origin ceremonies.
    public let topOrigin: String?

    /// The credential's algorithm.
    public var algorithm: COSEAlgorithm { credentialPublicKey.algorithm }
    /// The COSE_Key bytes to store.
    public var publicKeyCOSE: [UInt8] { credentialPublicKey.bytes }
    /// UV.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// BE (record it: it must never change).
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// BS.
    public var backupState: Bool { flags.contains(.backupState) }
}
