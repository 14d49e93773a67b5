import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// The verification half of a WebAuthn sign-in, shared by the plain WebAuthn API and the
/// `fido2` method of sign-in flows: WebAuthn L3 §7.2 in `FIDO.AssertionVerifier`, then one
/// call to `record_assertion` (AuthenticationMigrations 102) in which the challenge's single
/// use, the counter update and the `AuthenticationSucceeded` event commit together.
struct AssertionCeremony: Sendable {
    let context: ServiceContext
    /// The tenants' FIDO policies: user verification, algorithms and models apply to sign-in.
    let fidoPolicies: FIDOSignInPolicyStore
    let credentials: CredentialCache
    /// The usernames of credentials found without one (the read model is keyed by subject reference).
    let usernames: SubjectUsernames

    init(context: ServiceContext, credentialCacheSize: Int = CredentialCache.defaultCapacity) {
        self.context = context
        credentials = CredentialCache(capacity: credentialCacheSize)
        fidoPolicies = FIDOSignInPolicyStore(pool: context.pool)
        usernames = SubjectUsernames(context: context)
    }

    /// A verified assertion.
    struct Verified: Sendable {
        let username: String
        let userHandle: [UInt8]
        let rawID: [UInt8]
        /// base64url credential id.
        let credentialID: String
        let userVerified: Bool
        let backupState: Bool
        let signCount: UInt32
        let at: Date
        /// What was signed, and the key that verified it (evidence of transaction confirmations).
        let authenticatorData: [UInt8]
        let clientDataJSON: [UInt8]
        let signature: [UInt8]
        let publicKeyCOSE: [UInt8]
    }

    /// Verifies `credential` against `challenge` and records its use.
    ///
    /// - Parameters:
    ///   - expectedUsername: the user identified before the ceremony; nil for discoverable
    ///     credentials (the user handle identifies the user).
    ///   - expectedSubjectRef: the user identified before the ceremony by subject reference
    ///     only (a transaction's user): the credential's owner must have it.
    ///   - excluding: base64url ids of credentials that may not be used (already used in the
    ///     same sign-in flow); refused with `credential_already_used` before anything is recorded.
    ///   - standing: a method (`fido2`) whose standing for the signing user `record_assertion`
    ///     holds in its round trip (the direct route, where no guess was reserved before): locked
    ///     or on probation refuses before anything is written, and a success clears its failures.
    ///     nil in a sign-in flow, whose steps reserve their guesses (``AntiHammering``).
    /// - Throws: 400 problem+json whose code names the failed check; with `standing`, 423
    ///   `method_locked` or 429 `method_probation`.
    func verify(
        _ credential: AuthenticationResponseJSON, tenant: TenantResource, challenge: [UInt8], challengeExpiresAt: Date, expectedUsername: String?,
        userVerification: String, sessionID: String?, excluding: Set<String> = [], securePaymentConfirmation: Bool = false,
        expectedSubjectRef: String? = nil, standing: String? = nil, logger: Logger
    ) async throws -> Verified {
        let tenantID = tenant.id
        let r = credential.response
        guard credential.type == "public-key" else { throw HTTPError.invalid("credential.type", "type must be public-key.") }
        guard let rawID = Base64URL.decode(credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else {
            throw HTTPError.invalid("credential.rawId", "rawId must be base64url.")
        }
        guard let clientData = Base64URL.decode(r.clientDataJSON) else { throw HTTPError.invalid("credential.response.clientDataJSON", "must be base64url.") }
        guard let authData = Base64URL.decode(r.authenticatorData) else { throw HTTPError.invalid("credential.response.authenticatorData", "must be base64url.") }
        guard let signature = Base64URL.decode(r.signature) else { throw HTTPError.invalid("credential.response.signature", "must be base64url.") }
        var userHandle: [UInt8]?
        if let h = r.userHandle, !h.isEmpty {
            guard let decoded = Base64URL.decode(h) else { throw HTTPError.invalid("credential.response.userHandle", "must be base64url.") }
            userHandle = decoded
        }
        let credentialID = Base64URL.encode(rawID)
        if excluding.contains(credentialID) {
            throw HTTPError(.credentialAlreadyUsed, detail: "This credential already completed a step of this sign-in; use another.")
        }
        let challengeHash = SHA256.hash(challenge)
        var stored = try await load(tenant: tenantID, id: rawID)
        // §7.2 step 6: the credential must belong to the identified user (the read model knows
        // the owner by subject reference).
        if let expectedUsername,
            !ConstantTime.equals(context.configuration.subjectKey.ref(tenant: tenantID, username: expectedUsername), stored.subjectRef)
        {
            throw HTTPError(.credentialNotAllowed, detail: "This credential does not belong to the user signing in.")
        }
        // A transaction's user, known by subject reference only (TransactionChanged).
        if let expectedSubjectRef, !ConstantTime.equals(stored.subjectRef, expectedSubjectRef) {
            throw HTTPError(.credentialNotAllowed, detail: "This credential does not belong to the user signing in.")
        }
        // The tenant's FIDO policy applies to sign-in as to registration: a credential whose
        // algorithm or model it no longer accepts is refused, and `required` user verification
        // holds whatever the client or the step asked for.
        let policy = try await fidoPolicies.policy(for: tenantID)
        try policy.check(algorithm: stored.key.algorithm, aaguid: stored.aaguid)
        // The counter is judged by record_assertion against the stored value, in the
        // transaction that consumes the challenge; the verifier is given 0 so that it accepts
        // any counter here and still reports the new one.
        let record = CredentialRecord(
            id: rawID, parsedPublicKey: stored.key, signCount: 0, backupEligible: stored.backupEligible, backupState: false,
            userHandle: stored.userHandle)
        var relyingParty = RelyingParty(id: tenant.rpId, origins: tenant.origins)
        if credential.clientExtensionResults?.appid == true, let appId = policy.appId {
            // WebAuthn L3 §10.1.1: the client used the tenant's U2F AppID (a credential
            // registered with the U2F API), so rpIdHash is the AppID's hash, not the RP ID's.
            relyingParty = RelyingParty(id: appId, origins: tenant.origins)
        }
        var types = ["webauthn.get"]
        if securePaymentConfirmation, let collected = try? CollectedClientData(bytes: clientData), let payment = collected.payment {
            // Secure Payment Confirmation: the merchant's page (any origin, inside the top
            // origin the browser reports) runs the ceremony; what the user consented to is
            // bound by the challenge and checked against the transaction by the caller.
            relyingParty = RelyingParty(
                id: tenant.rpId, origins: tenant.origins + [collected.origin], allowsCrossOrigin: true, topOrigins: [payment.topOrigin])
            types = ["payment.get"]
        }
        let verifier = AssertionVerifier(
            relyingParty: relyingParty,
            requiresUserVerification: policy.userVerification(requested: userVerification) == "required"
                || securePaymentConfirmation && types == ["payment.get"],
            clientDataTypes: types)
        let response = AuthenticationResponse(
            id: credential.id, rawID: rawID, clientDataJSON: clientData, authenticatorData: authData, signature: signature, userHandle: userHandle)
        let verified: VerifiedAuthentication
        do {
            verified = try verifier.verify(
                response, expectedChallenge: challenge, credential: record, userIdentification: expectedUsername == nil && expectedSubjectRef == nil ? .byUserHandle : .beforeCeremony)
        } catch {
            logger.info("sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.signInRefused(error), detail: error.description)
        }
        // Whose the credential is, for the session: the identified user, or (found without one)
        // the registration service's answer for the reference, asked once per user and kept. Asked
        // after the signature verified and before the challenge is spent: a 503 here leaves the
        // sign-in retryable.
        let username: String
        if let expectedUsername {
            username = expectedUsername
        } else {
            username = try await ownerName(of: &stored, tenant: tenantID, id: rawID)
        }
        let now = Date()
        var event = try EventEnvelope(
            AuthenticationSucceeded(
                tenantId: tenantID, method: "fido2", credentialId: credentialID, signCount: Int(verified.newSignCount),
                backupState: verified.flags.contains(.backupState), userVerified: verified.flags.contains(.userVerified), sessionId: sessionID,
                authenticatedAt: now),
            source: ServiceName.authentication.eventSource, subject: tenantID, time: now)
        let traceStart = Tracer.now()
        let producerSpan = Outbox.trace(&event)
        // One round trip: the challenge's single use, the counter update and the event commit
        // together, and with `standing` the method's standing is held (AuthenticationMigrations
        // 102, 196).
        let outcome = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT outcome, stored_sign_count, probation_until FROM record_assertion(
                    \(tenantID), \(PostgresBytes(rawID)), \(PostgresBytes(stored.publicKeyCOSE)), \(PostgresBytes(challengeHash)),
                    \(challengeExpiresAt), \(Int64(verified.newSignCount)), \(verified.flags.contains(.backupState)), \(now),
                    \(event.id), \(AuthenticationSucceeded.topic), \(tenantID), \(event.type), \(event.source), \(event.subject),
                    \(event.time), \(String(decoding: event.data, as: UTF8.self)), \(event.traceparent), \(event.tracestate),
                    \(standing == nil ? nil : username), \(standing))
                """)
        }.first
        switch outcome?.string("outcome") {
        case "ok":
            Outbox.recordPublished(event, topic: AuthenticationSucceeded.topic, span: producerSpan, start: traceStart)
            context.relay.notify()
        case "method_locked":
            throw AntiHammering.refusal(.locked, now: now) ?? HTTPError(.methodLocked)
        case "method_probation":
            let until = outcome?.date("probation_until") ?? now
            throw AntiHammering.refusal(.probation(until: until), now: now) ?? HTTPError(.methodProbation)
        case "challenge_replayed":
            throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.")
        case "credential_suspended":
            credentials.remove(tenant: tenantID, id: rawID)
            throw HTTPError(.credentialSuspended, detail: "This credential is suspended.")
        case "sign_count_not_increased":
            // WebAuthn L3 §7.2 step 22: a possible clone. The credential stops working until an
            // administrator resumes it; the flag and its event commit together.
            let storedCount = outcome?.int64("stored_sign_count") ?? 0
            try await context.withTransaction { conn in
                try await conn.query(
                    "UPDATE credentials SET clone_suspected = true WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(rawID))")
                try await Outbox.enqueue(
                    CredentialCloneSuspected(
                        tenantId: tenantID, credentialId: credentialID, storedSignCount: Int(storedCount), presentedSignCount: Int(verified.newSignCount),
                        detectedAt: now),
                    source: .authentication, subject: tenantID, key: tenantID, on: conn)
            }
            credentials.remove(tenant: tenantID, id: rawID)
            logger.warning("possible cloned authenticator; credential flagged")
            throw HTTPError(.signCountNotIncreased, detail: "The signature counter did not increase; the authenticator may have been cloned.")
        default:
            credentials.remove(tenant: tenantID, id: rawID)
            throw HTTPError(.credentialNotFound, detail: "This credential is not registered for this tenant.")
        }
        return Verified(
            username: username, userHandle: stored.userHandle, rawID: rawID, credentialID: credentialID,
            userVerified: verified.flags.contains(.userVerified), backupState: verified.flags.contains(.backupState),
            signCount: verified.newSignCount, at: now, authenticatorData: authData, clientDataJSON: clientData, signature: signature,
            publicKeyCOSE: stored.publicKeyCOSE)
    }

    /// Whose the credential `rawId` names is, before its assertion is verified: so that the
    /// guess can be counted against that user's standing (anti-hammering) on the routes where
    /// the credential identifies the user (quick authentication, the direct route without a
    /// username). From the cache, the read model, or once per user the registration service.
    /// A credential that cannot sign in at all is refused first (``requireUsable(_:tenant:)``).
    ///
    /// - Returns: nil when `rawId` is not a credential id at all (``verify`` refuses it).
    /// - Throws: ``requireUsable(_:tenant:)``'s refusals.
    func owner(of credential: AuthenticationResponseJSON, tenant: String) async throws -> String? {
        guard let rawID = Base64URL.decode(credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else { return nil }
        var stored = try await usable(tenant: tenant, id: rawID)
        return try await ownerName(of: &stored, tenant: tenant, id: rawID)
    }

    /// The username of `stored`'s owner: kept with the cached credential, or the registration
    /// service's answer for its subject reference, asked once per user and then kept.
    private func ownerName(of stored: inout CachedCredential, tenant: String, id: [UInt8]) async throws -> String {
        if let known = stored.username { return known }
        let username = try await usernames.username(tenant: tenant, subjectRef: stored.subjectRef)
        stored.username = username
        credentials.store(stored, tenant: tenant, id: id)
        return username
    }

    /// Refuses a credential that cannot sign in at all (unknown, deleted, suspended, or of an
    /// algorithm or model the tenant's FIDO policy no longer accepts), before its assertion is
    /// evaluated: the credential's state says nothing of a guess, so such a refusal is not
    /// counted towards the user's standing (a user retrying with a suspended key, or a key the
    /// policy stopped accepting, does not lock their other passkeys). A credential cached before
    /// it was suspended is refused by ``verify`` (`record_assertion`), once: the cache forgets it.
    ///
    /// - Throws: 400 `credential_not_found`, `credential_suspended`, `policy_*`
    ///   (``unusableCredentialCodes``).
    func requireUsable(_ credential: AuthenticationResponseJSON, tenant: String) async throws {
        guard let rawID = Base64URL.decode(credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else { return }
        _ = try await usable(tenant: tenant, id: rawID)
    }

    /// The codes of ``requireUsable(_:tenant:)``'s refusals: the credential's state or the
    /// tenant's FIDO policy, which say nothing of a guess (a flow's fido2 step does not count
    /// them either, ``FIDO2Method/countsAsGuess(_:)``).
    static let unusableCredentialCodes: Set<String> = [
        ProblemCode.credentialNotFound.rawValue, ProblemCode.credentialSuspended.rawValue, ProblemCode.policyAlgorithmNotAllowed.rawValue,
        ProblemCode.policyAAGUIDNotAllowed.rawValue, ProblemCode.policyCertificationLevel.rawValue,
    ]

    /// The credential, once ``requireUsable(_:tenant:)``'s checks passed (cached credential and
    /// policy: no query while both are kept).
    private func usable(tenant: String, id: [UInt8]) async throws -> CachedCredential {
        let stored = try await load(tenant: tenant, id: id)
        try await fidoPolicies.policy(for: tenant).check(algorithm: stored.key.algorithm, aaguid: stored.aaguid)
        return stored
    }

    /// The credential's immutable part, from the cache or the read model. A credential read
    /// from the database is refused here when it is deleted, suspended or flagged; a cached one
    /// is checked by `record_assertion`.
    private func load(tenant: String, id: [UInt8]) async throws -> CachedCredential {
        if let cached = credentials.credential(tenant: tenant, id: id) { return cached }
        let row = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT c.subject_ref, s.username, c.user_handle, c.public_key_cose, c.backup_eligible, c.status, c.clone_suspected,
                    c.aaguid::text AS aaguid
                FROM credentials c LEFT JOIN subject_usernames s ON s.tenant_id = c.tenant_id AND s.subject_ref = c.subject_ref
                WHERE c.tenant_id = \(tenant) AND c.credential_id = \(PostgresBytes(id))
                """)
        }.first
        guard let row, row.string("status") != "deleted", let subjectRef = row.string("subject_ref"), let handle = row.bytes("user_handle"),
            let cose = row.bytes("public_key_cose")
        else { throw HTTPError(.credentialNotFound, detail: "This credential is not registered for this tenant.") }
        guard row.string("status") == "active", row.bool("clone_suspected") != true else {
            throw HTTPError(.credentialSuspended, detail: "This credential is suspended.")
        }
        guard let key = try? COSEKey(bytes: cose) else { throw HTTPError(.internalError, detail: "Stored key unusable.") }
        let credential = CachedCredential(
            subjectRef: subjectRef, username: row.string("username"), userHandle: handle, publicKeyCOSE: cose, key: key, backupEligible: row.bool("backup_eligible") ?? false,
            aaguid: row.string("aaguid"))
        credentials.store(credential, tenant: tenant, id: id)
        return credential
    }
}
