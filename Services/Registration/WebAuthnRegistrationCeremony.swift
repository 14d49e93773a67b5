import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

/// The WebAuthn registration ceremony (WebAuthn L3 §7.1): creation options, whose state
/// travels in a sealed handle (nothing is written), then verification of the browser's
/// response (in `FIDO.RegistrationVerifier`) under the tenant's FIDO policy, and the new
/// credential stored with its event. The caller has checked who may act on the user.
struct WebAuthnRegistrationCeremony: Sendable {
    let tenants: TenantDirectory
    let handles: CeremonyHandles
    let policies: FIDOPolicyStore
    let credentials: CredentialStore
    /// FIDO MDS3 metadata, when the deployment configures a BLOB.
    let metadata: MetadataService?
    /// The registration decision rules (nil: not consulted).
    var rules: RegistrationRules? = nil

    /// How long a registration ceremony may take (also the `timeout` hint to the browser).
    static let ceremonyLifetime: TimeInterval = 300
    static let handlePurpose = "signet.webauthn.registration.v1"
    /// ES256, EdDSA, RS256, PS256 (and ES384/ES512, then Ed448), in preference order.
    static let offeredAlgorithms = [-7, -8, -257, -37, -35, -36, -53]

    /// What the handle carries from options to finish.
    struct HandleState: Codable {
        var tenant: String
        var username: String
        var displayName: String
        var userHandle: String
        var challenge: String
        var expiresAt: Date
        var userVerification: String
        var algorithms: [Int]
        /// `conditional` for an automatic passkey creation (no user presence required).
        var mediation: String? = nil
        /// A passkey-only account (username-less sign-up): its credential must be discoverable.
        var passkeyOnly: Bool? = nil
    }

    /// Attestation trust anchors: MDS3 statements' roots, when configured, found by AAGUID or,
    /// for a U2F attestation certificate (no attested AAGUID), by its key identifier.
    var anchors: any AttestationTrustAnchorSource {
        if let metadata { return metadata }
        return ConfiguredTrustAnchors()
    }

    // MARK: - Options

    /// Creation options for `body.username` (an existing user keeps their handle and has their
    /// credentials excluded), tightened by the tenant's FIDO policy, with the sealed handle.
    ///
    /// - Throws: 400 `invalid_field`; 403 from the registration rules; 404 `tenant_not_found`;
    ///   409 `conflict` when the policy allows none of the offered algorithms.
    func options(_ body: RegistrationOptionsRequest, tenant tenantID: String) async throws -> RegistrationOptionsResponse {
        try await rules?.requireOffered("fido2", tenant: tenantID, username: body.username)
        let displayName = body.displayName ?? body.username
        guard !displayName.isEmpty, displayName.count <= 256, !displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw HTTPError.invalid("displayName", "displayName must be 1-256 characters without control characters.") }
        let requestedSelection = try Self.selection(body.authenticatorSelection)
        let requestedAttestation = body.attestation ?? "none"
        guard ["none", "indirect", "direct", "enterprise"].contains(requestedAttestation) else {
            throw HTTPError.invalid("attestation", "attestation must be none, indirect, direct or enterprise.")
        }
        if let mediation = body.mediation, mediation != "conditional" {
            throw HTTPError.invalid("mediation", "mediation must be conditional when given.")
        }
        let hints = body.hints ?? []
        guard hints.count <= 3, hints.allSatisfy({ ["security-key", "client-device", "hybrid"].contains($0) }) else {
            throw HTTPError.invalid("hints", "hints may contain security-key, client-device and hybrid.")
        }
        guard let tenant = try await tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // The tenant's FIDO policy tightens what the RP asked for, never loosens it.
        let policy = try await policies.policy(for: tenantID)
        if body.mediation == "conditional", !policy.autoCreatePasskey {
            throw HTTPError(.conditionalCreateNotAllowed, detail: "The tenant's FIDO policy does not allow creating passkeys automatically.")
        }
        // Existing user: same user handle, and their credentials are excluded.
        let (userHandle, existing, passkeyOnly) = try await credentials.existing(tenant: tenantID, username: body.username)
        var selection = requestedSelection
        if policy.userVerification == .required { selection.userVerification = "required" }
        // A passkey-only account (a username-less sign-up) signs in without a username: its
        // credential must be discoverable (WebAuthn L3 §5.4.6), whatever the RP asked.
        if policy.residentKey == .required || passkeyOnly {
            selection.residentKey = "required"
            selection.requireResidentKey = true
        }
        let attestation = body.attestation ?? (policy.attestation.required ? policy.attestation.conveyance.rawValue : requestedAttestation)
        let algorithms = Self.offeredAlgorithms.filter { policy.allowedAlgorithms.contains(COSEAlgorithm(rawValue: $0)) }
        guard !algorithms.isEmpty else { throw HTTPError(.conflict, detail: "The tenant's policy allows none of the offered algorithms.") }

        let handleBytes = userHandle ?? SecureRandom.bytes(32)
        let challenge = SecureRandom.bytes(32)
        let state = HandleState(
            tenant: tenantID, username: body.username, displayName: displayName, userHandle: Base64URL.encode(handleBytes),
            challenge: Base64URL.encode(challenge), expiresAt: Date().addingTimeInterval(Self.ceremonyLifetime),
            userVerification: selection.userVerification ?? "preferred", algorithms: algorithms, mediation: body.mediation,
            passkeyOnly: passkeyOnly ? true : nil)
        let options = CreationOptionsJSON(
            rp: RelyingPartyEntityJSON(id: tenant.rpId, name: tenant.displayName),
            user: UserEntityJSON(id: state.userHandle, name: body.username, displayName: displayName),
            challenge: state.challenge,
            pubKeyCredParams: algorithms.map { CredentialParametersJSON(alg: $0) },
            timeout: Int(Self.ceremonyLifetime * 1000),
            excludeCredentials: existing,
            authenticatorSelection: selection,
            hints: hints,
            attestation: attestation,
            extensions: ExtensionInputsJSON(credProps: true))
        let handle = try handles.seal(state, purpose: Self.handlePurpose)
        return RegistrationOptionsResponse(handle: handle, publicKey: options, mediation: body.mediation)
    }

    /// The authenticator selection asked for, completed with its defaults.
    ///
    /// - Throws: 400 `invalid_field` for a value WebAuthn does not define.
    static func selection(_ requested: AuthenticatorSelectionJSON?) throws -> AuthenticatorSelectionJSON {
        var s = requested ?? AuthenticatorSelectionJSON()
        if let a = s.authenticatorAttachment, !["platform", "cross-platform"].contains(a) {
            throw HTTPError.invalid("authenticatorSelection.authenticatorAttachment", "authenticatorAttachment must be platform or cross-platform.")
        }
        let rk = s.residentKey ?? (s.requireResidentKey == true ? "required" : "preferred")
        guard ["required", "preferred", "discouraged"].contains(rk) else {
            throw HTTPError.invalid("authenticatorSelection.residentKey", "residentKey must be required, preferred or discouraged.")
        }
        let uv = s.userVerification ?? "preferred"
        guard ["required", "preferred", "discouraged"].contains(uv) else {
            throw HTTPError.invalid("authenticatorSelection.userVerification", "userVerification must be required, preferred or discouraged.")
        }
        s.residentKey = rk
        s.requireResidentKey = rk == "required"
        s.userVerification = uv
        return s
    }

    // MARK: - Finish

    /// Opens the handle of a finish request.
    ///
    /// - Throws: 400 `invalid_handle` (also for another tenant's).
    func open(_ body: RegistrationFinishRequest, tenant tenantID: String) throws -> HandleState {
        let state = try handles.open(body.handle, as: HandleState.self, purpose: Self.handlePurpose)
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "The handle belongs to another tenant.") }
        return state
    }

    /// Verifies the browser's response to the ceremony of `state` and stores the credential.
    ///
    /// - Returns: the credential, with the quick-authentication data for the client.
    /// - Throws: 400 `handle_expired`, or with the failed check's code (`FIDO.WebAuthnError`, `policy_*`,
    ///   `credential_id_mismatch`, `challenge_replayed`, `invalid_field`); 409
    ///   `credential_exists` or `conflict`.
    func finish(_ body: RegistrationFinishRequest, state: HandleState, tenant tenantID: String, logger: Logger) async throws -> CredentialResource {
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The registration ceremony expired; start again.") }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 {
            throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.")
        }
        if let name = body.deviceName, name.isEmpty || name.count > 100 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HTTPError.invalid("deviceName", "deviceName must be 1-100 characters without control characters.")
        }
        guard let tenant = try await tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        guard let clientData = Base64URL.decode(body.credential.response.clientDataJSON) else {
            throw HTTPError.invalid("credential.response.clientDataJSON", "clientDataJSON must be base64url.")
        }
        guard let attestationObject = Base64URL.decode(body.credential.response.attestationObject) else {
            throw HTTPError.invalid("credential.response.attestationObject", "attestationObject must be base64url.")
        }
        guard body.credential.type == "public-key" else { throw HTTPError.invalid("credential.type", "type must be public-key.") }
        guard let challenge = Base64URL.decode(state.challenge), let userHandle = Base64URL.decode(state.userHandle) else {
            throw HTTPError(.invalidHandle)
        }
        let policy = try await policies.policy(for: tenantID)
        // A trust path is trusted only when it chains to the MDS3 roots of the authenticator's
        // model (or configured anchors). An untrusted one fails a policy that requires
        // attestation; otherwise it counts as `none` with no trust path (§7.1 steps 23–24 and
        // the step after storing), so `acceptNone` decides, and it is stored and listed as none.
        let verifier = RegistrationVerifier(
            relyingParty: RelyingParty(id: tenant.rpId, origins: tenant.origins),
            requiresUserVerification: state.userVerification == "required" || policy.userVerification == .required,
            // WebAuthn L3 §7.1 step 14: a conditional create may be made without user presence.
            requiresUserPresence: state.mediation != "conditional",
            allowedAlgorithms: state.algorithms.map { COSEAlgorithm(rawValue: $0) },
            trustEvaluator: TrustAnchorEvaluator(source: anchors, allowsIntermediateAnchors: true),
            untrustedAttestation: policy.attestation.required ? .refuse : .treatAsNone)
        let response = RegistrationResponse(
            clientDataJSON: clientData, attestationObject: attestationObject, transports: body.credential.response.transports ?? [])
        let verified: VerifiedRegistration
        do {
            verified = try verifier.verify(response, expectedChallenge: challenge)
        } catch {
            logger.info("registration refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.registrationRefused(error), detail: error.description)
        }
        if let untrusted = verified.untrustedAttestation {
            logger.info("attestation not trusted; evaluated as none", metadata: [
                LogKey.errorCode: .string(untrusted.code.rawValue), "signet.attestation.format": .string(verified.attestationFormat),
            ])
        }
        if case .refused(let refusal) = policy.evaluate(
            registration: verified, metadata: metadata, residentKey: body.credential.clientExtensionResults?.credProps?.rk)
        {
            logger.info("registration refused by policy", metadata: [LogKey.errorCode: .string(refusal.code.rawValue)])
            throw HTTPError(
                .refusedByPolicy(refusal),
                detail: "Refused by the tenant's FIDO policy rule \(refusal.rule): \(refusal.detail).")
        }
        // A passkey-only account signs in only with a discoverable credential: a client that
        // reports it made a server-side one (credProps.rk false) would leave the account without
        // a way in. A client that does not report it made one, as `residentKey: "required"` asks.
        if state.passkeyOnly == true, body.credential.clientExtensionResults?.credProps?.rk == false {
            logger.info("registration refused: not discoverable for a passkey-only account")
            throw HTTPError(
                .discoverableCredentialRequired,
                detail: "This account signs in without a username: the passkey must be discoverable (credProps.rk was false).")
        }
        // The credential id the client reports must be the authenticator's.
        guard Base64URL.decode(body.credential.rawId) == verified.credentialID, body.credential.id == body.credential.rawId else {
            throw HTTPError(.credentialIDMismatch, detail: "id/rawId differ from the attested credential id.")
        }
        let now = Date()
        let transports = Array((body.credential.response.transports ?? []).prefix(8))
        let aaguid = verified.aaguid.description.lowercased()
        try await credentials.register(
            CredentialStore.NewCredential(
                tenant: tenantID, username: state.username, displayName: state.displayName, userHandle: userHandle,
                credentialID: verified.credentialID, publicKeyCOSE: verified.publicKeyCOSE, algorithm: verified.algorithm.rawValue,
                signCount: verified.signCount, aaguid: aaguid, backupEligible: verified.backupEligible, backupState: verified.backupState,
                userVerified: verified.userVerified, transports: transports, attestationFormat: verified.attestationFormat,
                attestationType: verified.attestationType.rawValue, friendlyName: body.friendlyName, deviceName: body.deviceName),
            challenge: challenge, challengeExpiresAt: state.expiresAt, at: now)
        logger.info("credential registered", metadata: ["signet.attestation.format": .string(verified.attestationFormat)])
        var registered = CredentialResource(
            credentialId: Base64URL.encode(verified.credentialID), aaguid: aaguid, attestationFormat: verified.attestationFormat,
            attestationType: verified.attestationType.rawValue, algorithm: verified.algorithm.rawValue, userVerified: verified.userVerified,
            backupEligible: verified.backupEligible, backupState: verified.backupState, transports: transports, friendlyName: body.friendlyName,
            status: "active", createdAt: now, lastUsedAt: nil)
        registered.quickAuth = QuickAuthData(tenant: tenantID, rpId: tenant.rpId, credentialId: registered.credentialId)
        registered.deviceName = body.deviceName
        registered.model = Self.model(verified.aaguid, metadata: metadata)
        return registered
    }

    /// The model of `aaguid` as FIDO metadata describes it, when it lists it.
    static func model(_ aaguid: AAGUID, metadata: MetadataService?) -> AuthenticatorModel? {
        guard !aaguid.isZero, let statement = metadata?.statement(for: aaguid) else { return nil }
        return AuthenticatorModel(name: statement.description, icon: statement.icon, protocolFamily: statement.protocolFamily)
    }
}
