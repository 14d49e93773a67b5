import Crypto

/// Verifies an authentication assertion: WebAuthn L3 §7.2, every step that falls to a server,
/// in the specification's order, each failing with its own ``WebAuthnError/Code``.
///
/// A pure function of its inputs: the response, the challenge that was issued, the credential
/// record and this policy. It reads no clock, database or network. Single use of the challenge
/// and persisting the new counter are the caller's (one transaction, see the architecture).
///
/// Steps 1–4 (calling `navigator.credentials.get()`), 7 (naming the fields), 23 (attestation
/// in assertions, not requested by Signet) and 24–25 (updating the record) are outside it.
/// Step 19 (extension outputs) is left to the caller: the authenticator extensions are returned
/// in ``VerifiedAuthentication/extensions``.
public struct AssertionVerifier: Sendable {
    /// What to do when the signature counter does not increase (§7.2 step 22).
    public enum CounterPolicy: Sendable, Hashable {
        /// Refuse the assertion with ``WebAuthnError/Code/signCountNotIncreased`` (default).
        case reject
        /// Accept it and report ``VerifiedAuthentication/possibleClone`` for risk scoring.
        case acceptAndFlag
    }

    /// How the user was identified (§7.2 step 6).
    public enum UserIdentification: Sendable, Hashable {
        /// Before the ceremony (username, cookie): `userHandle`, if present, must match.
        case beforeCeremony
        /// By the response's `userHandle` (discoverable credentials): it must be present and match.
        case byUserHandle
    }

    /// The relying party (RP IDs, origins, cross-origin policy).
    public var relyingParty: RelyingParty
    /// Whether the UV flag must be set (`userVerification: "required"`).
    public var requiresUserVerification: Bool
    /// Acceptable `clientData.type` values. Default `webauthn.get`.
    public var clientDataTypes: [String]
    /// Algorithms credentials may still use (a policy may retire one after registration).
    public var allowedAlgorithms: [COSEAlgorithm]
    /// The counter rule.
    public var counterPolicy: CounterPolicy

    public init(
        relyingParty: RelyingParty, requiresUserVerification: Bool, clientDataTypes: [String] = ["webauthn.get"],
        allowedAlgorithms: [COSEAlgorithm] = COSEAlgorithm.defaultAllowed, counterPolicy: CounterPolicy = .reject
    ) {
        self.relyingParty = relyingParty
        self.requiresUserVerification = requiresUserVerification
        self.clientDataTypes = clientDataTypes
        self.allowedAlgorithms = allowedAlgorithms
        self.counterPolicy = counterPolicy
    }

    /// Verifies `response` against the credential record it claims.
    ///
    /// - Parameters:
    ///   - response: The assertion, base64url-decoded.
    ///   - expectedChallenge: The challenge issued for this ceremony.
    ///   - credential: The record found by `rawId` (and the user).
    ///   - allowCredentials: The IDs sent in `allowCredentials` (empty for discoverable flows).
    ///   - userIdentification: How the user was identified.
    /// - Returns: The new counter and flags to store.
    /// - Throws: ``WebAuthnError`` naming the first failed step.
    public func verify(
        _ response: AuthenticationResponse, expectedChallenge: [UInt8], credential: CredentialRecord,
        allowCredentials: [[UInt8]] = [], userIdentification: UserIdentification = .beforeCeremony
    ) throws(WebAuthnError) -> VerifiedAuthentication {
        // §5.1: `id` is `rawId` in base64url.
        if let id = response.id, !id.utf8.elementsEqual(Base64URL.encodeASCII(response.rawID)) {
            throw WebAuthnError(.credentialIDMismatch, step: "§5.1 id/rawId", "id is not rawId in base64url")
        }
        // Step 5: if allowCredentials is not empty, the credential is one of them.
        if !allowCredentials.isEmpty, !allowCredentials.contains(response.rawID) {
            throw WebAuthnError(.credentialNotAllowed, step: "§7.2 step 5", "credential is not in allowCredentials")
        }
        // Step 6: the credential record is the one for rawId, and the user handle agrees.
        guard response.rawID == credential.id else {
            throw WebAuthnError(.credentialIDMismatch, step: "§7.2 step 6", "rawId is not the credential record's id")
        }
        let userHandle = response.userHandle.flatMap { $0.isEmpty ? nil : $0 }
        switch (userIdentification, userHandle) {
        case (.byUserHandle, nil):
            throw WebAuthnError(.userHandleMissing, step: "§7.2 step 6", "userHandle is required for discoverable credentials")
        case (_, let handle?):
            guard ConstantTime.equals(handle, credential.userHandle) else {
                throw WebAuthnError(.userHandleMismatch, step: "§7.2 step 6", "userHandle is not the account's user handle")
            }
        case (.beforeCeremony, nil):
            break
        }

        // Steps 8–9: UTF-8 decode and parse clientDataJSON.
        let clientData: CollectedClientData
        do {
            clientData = try CollectedClientData(bytes: response.clientDataJSON)
        } catch {
            throw error.at("§7.2 steps 8–9")
        }
        // Steps 10–13: type, challenge, origin, crossOrigin/topOrigin.
        try relyingParty.verify(clientData, types: clientDataTypes, challenge: expectedChallenge, steps: .authentication)

        // Step 14: rpIdHash.
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(bytes: response.authenticatorData, requiringConsistentBackupFlags: false)
        } catch {
            throw error.at("§7.2 step 14")
        }
        guard let rpID = relyingParty.rpID(matching: authData.rpIDHash) else {
            throw WebAuthnError(.rpIDHashMismatch, step: "§7.2 step 14", "rpIdHash is not SHA-256 of an expected RP ID")
        }
        // Step 15: UP.
        guard authData.userPresent else {
            throw WebAuthnError(.userNotPresent, step: "§7.2 step 15", "the UP flag is not set")
        }
        // Step 16: UV when required.
        if requiresUserVerification, !authData.userVerified {
            throw WebAuthnError(.userVerificationRequired, step: "§7.2 step 16", "the UV flag is not set")
        }
        // Step 17: BS only with BE.
        guard authData.hasConsistentBackupFlags else {
            throw WebAuthnError(.backupStateInconsistent, step: "§7.2 step 17", "BS is set but BE is not")
        }
        // Step 18: BE never changes after registration.
        guard authData.backupEligible == credential.backupEligible else {
            throw WebAuthnError(.backupEligibilityChanged, step: "§7.2 step 18", "BE differs from the value recorded at registration")
        }
        // Step 19: extension outputs are returned for the caller's policy.

        // Step 20: hash of cData.
        let hash = SHA256.hash(response.clientDataJSON)
        // Step 21: the signature over authData ‖ hash, with the credential's own key and algorithm.
        let key = try credentialKey(credential)
        guard key.verify(signature: response.signature, message: authData.bytes + hash) else {
            throw WebAuthnError(.signatureInvalid, step: "§7.2 step 21", "signature does not verify with the credential public key")
        }
        // Step 22: the signature counter.
        var possibleClone = false
        if authData.signCount != 0 || credential.signCount != 0, authData.signCount <= credential.signCount {
            switch counterPolicy {
            case .reject:
                throw WebAuthnError(.signCountNotIncreased, step: "§7.2 step 22", "signature counter did not increase: possible cloned authenticator")
            case .acceptAndFlag:
                possibleClone = true
            }
        }

        return VerifiedAuthentication(
            credentialID: credential.id, newSignCount: authData.signCount, flags: authData.flags, possibleClone: possibleClone,
            rpID: rpID, origin: clientData.origin, topOrigin: clientData.topOrigin, extensions: authData.extensions,
            algorithm: key.algorithm)
    }

    /// The credential's key, parsed if the record does not carry it parsed, and still allowed.
    private func credentialKey(_ credential: CredentialRecord) throws(WebAuthnError) -> COSEKey {
        let key: COSEKey
        if let parsed = credential.parsedPublicKey {
            key = parsed
        } else {
            do {
                key = try COSEKey(bytes: credential.publicKey)
            } catch {
                throw WebAuthnError(cose: error, step: "§7.2 step 21")
            }
        }
        guard allowedAlgorithms.contains(key.algorithm) else {
            throw WebAuthnError(.algorithmNotAllowed, step: "§7.2 step 21", "the credential's algorithm is no longer allowed")
        }
        return key
    }
}

/// The outcome of a successful assertion: what to store and what to tell the caller.
public struct VerifiedAuthentication: Sendable {
    /// The credential used.
    public let credentialID: [UInt8]
    /// The counter to store (§7.2 step 24).
    public let newSignCount: UInt32
    /// The authenticator data flags.
    public let flags: AuthenticatorData.Flags
    /// True when the counter did not increase and the policy is ``AssertionVerifier/CounterPolicy/acceptAndFlag``.
    public let possibleClone: Bool
    /// The RP ID the authenticator data was scoped to.
    public let rpID: String
    /// `clientData.origin`.
    public let origin: String
    /// `clientData.topOrigin`, for cross-origin ceremonies.
    public let topOrigin: String?
    /// Authenticator extension outputs (§7.2 step 19 is the caller's).
    public let extensions: CBORValue?
    /// The credential's algorithm.
    public let algorithm: COSEAlgorithm

    /// UV.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// UP.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// BE.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// BS (store it: §7.2 step 24).
    public var backupState: Bool { flags.contains(.backupState) }
}

extension WebAuthnError {
    /// The same failure, attributed to the ceremony step that hit it.
    func at(_ step: String) -> WebAuthnError {
        WebAuthnError(code, step: step, detail, file: file, line: line)
    }

    /// A COSE_Key failure as a WebAuthn failure: algorithms and curves Signet cannot verify are
    /// ``Code/algorithmUnsupported``; anything else is a malformed key.
    init(cose error: COSEKeyError, step: String, file: String = #fileID, line: Int = #line) {
        let unsupported = error.code == .unsupportedAlgorithm || error.code == .unsupportedCurve
        let code: Code = unsupported ? .algorithmUnsupported : .malformedCredentialPublicKey
        self.init(code, step: step, "\(error.code): \(error.reason)", file: file, line: line)
    }
}
