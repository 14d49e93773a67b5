import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// The UAF half of a sign-in, shared by the plain UAF API (``UAFAuthenticationRoutes``) and the
/// `uaf` method of sign-in flows (``UAFMethod``): AuthenticationRequest messages, then UAF
/// Protocol §3.5.7.5 in `FIDO.UAFAuthenticationVerifier` against the read model of
/// registration's keys, and one transaction in which the challenge is spent and the counters
/// are stored under the row lock.
struct UAFAssertionCeremony: Sendable {
    let context: ServiceContext
    /// The registration service's public base URL (`SIGNET_UAF_APP_ID_BASE`), as there.
    let appIDBase: String
    /// The certificate(s) UAF clients' TLS server presents (`SIGNET_UAF_TLS_SERVER_CERTIFICATES`),
    /// for channel binding; empty: not compared.
    var serverCertificates: [UAFServerCertificate] = []
    /// The usernames of keys found without one (the read model is keyed by subject reference).
    var usernames: SubjectUsernames { SubjectUsernames(context: context) }

    static let offeredVersions: [UAFVersion] = [.v1_2, .v1_1]

    /// The tenant's AppID: the URL of its TrustedFacets document on the registration service.
    func appID(tenant: String) -> String { "\(appIDBase)/v1/tenants/\(tenant)/uaf/facets" }

    /// A verified assertion.
    struct Verified: Sendable {
        let username: String
        let aaid: String
        /// base64url KeyID.
        let keyID: String
        let confirmedTransaction: Bool
        /// The first assertion as sent, the fcParams it signs and its registration: what a
        /// transaction confirmation keeps as evidence.
        let assertion: String
        let fcParams: String
        let record: UAFRegistrationRecord

        /// The evidence of a transaction confirmation step whose challenge was derived with
        /// `nonce` (``FIDO/UAFTransactionConfirmation``), checked again by the transaction service.
        func evidence(nonce: [UInt8]) -> SignedAssertionEvidence {
            let signature = Base64URL.decode(assertion).flatMap { try? UAFAuthenticationAssertion(bytes: $0).signature } ?? []
            return SignedAssertionEvidence(
                credentialId: keyID, authenticatorData: assertion, clientDataJSON: fcParams, signature: Base64URL.encode(signature),
                publicKeyCose: Base64URL.encode(record.publicKey), nonce: Base64URL.encode(nonce), format: SignedAssertionEvidence.uafFormat,
                aaid: record.aaid, keyEncoding: Int(record.keyEncoding.rawValue), signatureAlgorithm: Int(record.signatureAlgorithm.rawValue))
        }
    }

    /// AuthenticationRequest messages, one per version offered. With `keys` (the user's active
    /// keys), the policy names exactly those; otherwise it is the tenant's. The tenant's
    /// disallowed criteria apply either way.
    func requestMessages(
        tenant: TenantResource, keys: [(aaid: String, keyID: String)]?, challenge: String, serverData: String, transactions: [UAFTransaction]
    ) async throws -> [JSONValue] {
        var policy = try await UAFReadModel.settings(tenant, pool: context.pool).policy
        if let keys, !keys.isEmpty {
            policy = UAFPolicy(accepted: keys.map { [UAFMatchCriteria(aaid: [$0.aaid], keyIDs: [$0.keyID])] }, disallowed: policy.disallowed)
        }
        let appID = appID(tenant: tenant.id)
        return try Self.offeredVersions.map { version in
            try JSONValueEncoder().encode(
                UAFAuthenticationRequest(
                    header: UAFOperationHeader(upv: version, op: "Auth", appID: appID, serverData: serverData),
                    challenge: challenge, transaction: transactions.isEmpty ? nil : transactions, policy: policy))
        }
    }

    /// The stored keys `response`'s assertions name (read before verifying: the verifier is
    /// pure), each active, of `expectedUsername` when given, and all of one user. An assertion
    /// that does not parse names no key here; the verifier refuses it with its code.
    ///
    /// - Throws: 400 `credential_already_used` (a key in `excluding`), `credential_not_allowed`
    ///   (another user's key, or keys of several users), `credential_suspended`
    ///   (``presentedKeyCodes``).
    func presentedKeys(
        _ response: UAFResponse, tenant tenantID: String, expectedUsername: String?, excluding: Set<String> = []
    ) async throws -> [UAFReadModel.Stored] {
        let keys = response.assertions.compactMap { message -> (aaid: String, keyID: [UInt8])? in
            guard let bytes = Base64URL.decode(message.assertion), let a = try? UAFAuthenticationAssertion(bytes: bytes) else { return nil }
            return (a.aaid, a.keyID)
        }
        if keys.contains(where: { excluding.contains(Base64URL.encode($0.keyID)) }) {
            throw HTTPError(.credentialAlreadyUsed, detail: "This authenticator key already completed a step of this sign-in; use another.")
        }
        let stored = try await UAFReadModel.load(tenant: tenantID, keys: keys, pool: context.pool)
        // The read model knows keys' owners by subject reference.
        let expectedSubjectRef = expectedUsername.map { context.configuration.subjectKey.ref(tenant: tenantID, username: $0) }
        for s in stored {
            if let expectedSubjectRef, !ConstantTime.equals(expectedSubjectRef, s.subjectRef) {
                throw HTTPError(.credentialNotAllowed, detail: "This authenticator key does not belong to the user signing in.")
            }
            guard s.status == "active" else { throw HTTPError(.credentialSuspended, detail: "This authenticator key is suspended.") }
        }
        guard Set(stored.map(\.subjectRef)).count <= 1 else {
            throw HTTPError(.credentialNotAllowed, detail: "The assertions are from keys of different users.")
        }
        return stored
    }

    /// The codes of ``presentedKeys(_:tenant:expectedUsername:excluding:)``'s refusals.
    static let presentedKeyCodes: Set<String> = [
        ProblemCode.credentialAlreadyUsed.rawValue, ProblemCode.credentialNotAllowed.rawValue, ProblemCode.credentialSuspended.rawValue,
    ]

    /// The codes of the tenant's UAF policy's refusals (`policy_uaf_*`).
    static let policyRefusalCodes: Set<String> = [UAFError.Code.policyDisallowed.rawValue, UAFError.Code.policyNotAccepted.rawValue]

    /// Whether a refusal of a UAF response counts as a guess against the user's standing: the
    /// keys' state (``presentedKeyCodes``) and the tenant's UAF policy say nothing of the user's
    /// secret, so neither counts, in a flow's step (``UAFMethod``) as on the direct route.
    static func countsAsGuess(_ refusal: HTTPError) -> Bool {
        let code = refusal.code.rawValue
        return !presentedKeyCodes.contains(code) && !policyRefusalCodes.contains(code)
    }

    /// Whose keys `presented` (an answer of ``presentedKeys(_:tenant:expectedUsername:excluding:)``)
    /// are: `expectedUsername` when the request named the user, else the registration service's
    /// answer for their subject reference (asked once per user and kept, ``SubjectUsernames``);
    /// nil when no key is known (the verifier refuses the response).
    ///
    /// - Throws: 400 `credential_not_found` for a user erased; 503 `user_directory_unavailable`.
    func owner(of presented: [UAFReadModel.Stored], tenant: String, expectedUsername: String?) async throws -> String? {
        guard let ref = presented.first?.subjectRef else { return nil }
        if let expectedUsername { return expectedUsername }
        return try await usernames.username(tenant: tenant, subjectRef: ref)
    }

    /// Verifies `response` for the request that issued `challenge` and `serverData`, and records it.
    ///
    /// - Parameters:
    ///   - expectedUsername: the user the request was for; nil accepts any user's key.
    ///   - presented: the response's keys, when the caller has read them already
    ///     (``presentedKeys(_:tenant:expectedUsername:excluding:)`` with the same arguments).
    ///   - sessionID: the session the sign-in will issue, for the AuthenticationSucceeded event.
    ///   - decision: a transaction decision to publish with the verified assertion, in the
    ///     transaction that spends the challenge.
    ///   - recorded: work done in the transaction that spends the challenge (a success
    ///     clearing the user's failures), after the decision.
    ///   - excluding: base64url KeyIDs that may not be used (already used in the same flow).
    /// - Throws: 400 problem+json whose code names the failed check.
    func verify(
        _ response: UAFResponse, tenant: TenantResource, challenge: String, serverData: String, challengeExpiresAt: Date, expectedUsername: String?,
        shown: [UAFShownTransaction], excluding: Set<String> = [], presented: [UAFReadModel.Stored]? = nil, sessionID: String? = nil,
        logger: Logger, decision: (@Sendable (Verified, Date) -> TransactionDecision?)? = nil,
        recorded: (@Sendable (Verified, PostgresConnection) async throws -> Void)? = nil
    ) async throws -> Verified {
        let tenantID = tenant.id
        let settings = try await UAFReadModel.settings(tenant, pool: context.pool)
        let stored: [UAFReadModel.Stored]
        if let presented {
            stored = presented
        } else {
            stored = try await presentedKeys(response, tenant: tenantID, expectedUsername: expectedUsername, excluding: excluding)
        }
        let verifier = UAFAuthenticationVerifier(
            context: UAFResponseContext(
                appID: appID(tenant: tenantID), trustedFacetIDs: settings.facetIDs, acceptedVersions: Self.offeredVersions,
                serverCertificates: serverCertificates),
            policy: settings.policy)
        let verified: [UAFVerifiedAuthentication]
        do {
            // The counter is judged in the transaction that consumes the challenge, against the
            // stored value under the row lock; the verifier is given 0 so that it accepts any
            // counter here (a replay is then refused as challenge_replayed, not by its counter).
            verified = try verifier.verify(response, expectedChallenge: challenge, serverData: serverData, shown: shown) { aaid, keyID in
                // (The record's metadata characteristics go with it: the policy is matched on them.)
                stored.first { $0.record.aaid == aaid && $0.record.keyID == keyID }?.record.withSignCounter(0)
            }
        } catch {
            logger.info("uaf sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.uafSignInRefused(error), detail: error.description)
        }
        guard let first = verified.first, let ownerRef = stored.first?.subjectRef else { throw HTTPError(.credentialNotFound) }
        // Whose the keys are, for the session: the identified user, or (found without one) the
        // registration service's answer, asked once per user and kept (``SubjectUsernames``);
        // before the challenge is spent, so a 503 leaves the sign-in retryable.
        let owner: String
        if let expectedUsername { owner = expectedUsername } else { owner = try await usernames.username(tenant: tenantID, subjectRef: ownerRef) }
        let result = Verified(
            username: owner, aaid: first.record.aaid, keyID: Base64URL.encode(first.record.keyID), confirmedTransaction: first.confirmedTransaction,
            assertion: response.assertions[0].assertion, fcParams: response.fcParams, record: first.record)
        // The challenge's single use, the counters and an AuthenticationSucceeded event per key
        // commit together; the counter condition is checked again under the row lock, so two
        // concurrent uses of one counter value cannot both pass.
        let now = Date()
        do {
            try await context.withTransaction { conn in
                let used = try await conn.query(
                    """
                    INSERT INTO used_challenges (challenge_hash, expires_at)
                    VALUES (\(PostgresBytes(SHA256.hash(Array(challenge.utf8)))), \(challengeExpiresAt)) ON CONFLICT DO NOTHING
                    """)
                guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.") }
                for v in verified {
                    let counter = Int64(v.newSignCounter)
                    let updated = try await conn.query(
                        """
                        UPDATE uaf_registrations SET sign_counter = \(counter)
                        WHERE tenant_id = \(tenantID) AND aaid = \(v.record.aaid) AND key_id = \(PostgresBytes(v.record.keyID)) AND status = 'active'
                            AND NOT clone_suspected AND (sign_counter < \(counter) OR (sign_counter = 0 AND \(counter) = 0))
                        """)
                    guard updated.affectedRows == 1 else {
                        let row = try await conn.query(
                            """
                            SELECT sign_counter, status, clone_suspected FROM uaf_registrations
                            WHERE tenant_id = \(tenantID) AND aaid = \(v.record.aaid) AND key_id = \(PostgresBytes(v.record.keyID))
                            """
                        ).first
                        guard let row, row.string("status") == "active", row.bool("clone_suspected") == false else {
                            throw HTTPError(.credentialSuspended, detail: "This authenticator key is suspended.")
                        }
                        throw CounterNotIncreased(record: v.record, stored: row.int64("sign_counter") ?? 0, presented: counter)
                    }
                    try await Outbox.enqueue(
                        AuthenticationSucceeded(
                            tenantId: tenantID, method: "uaf", credentialId: Base64URL.encode(v.record.keyID), signCount: Int(v.newSignCounter),
                            backupState: false, userVerified: true, sessionId: sessionID, authenticatedAt: now, aaid: v.record.aaid),
                        source: .authentication, subject: tenantID, key: tenantID, on: conn)
                }
                if let event = decision?(result, now) {
                    try await Outbox.enqueue(event, source: .authentication, subject: tenantID, key: tenantID, on: conn)
                }
                try await recorded?(result, conn)
            }
        } catch let clone as CounterNotIncreased {
            // UAF Protocol §3.5.7.5 step 4.f: a counter that did not increase may be a cloned
            // authenticator. The key stops working until registration resumes it; the flag and
            // its event commit together (registration suspends the key on that event).
            try await context.withTransaction { conn in
                try await conn.query(
                    """
                    UPDATE uaf_registrations SET clone_suspected = true
                    WHERE tenant_id = \(tenantID) AND aaid = \(clone.record.aaid) AND key_id = \(PostgresBytes(clone.record.keyID))
                    """)
                try await Outbox.enqueue(
                    CredentialCloneSuspected(
                        tenantId: tenantID, credentialId: Base64URL.encode(clone.record.keyID), storedSignCount: Int(clone.stored),
                        presentedSignCount: Int(clone.presented), detectedAt: now, aaid: clone.record.aaid),
                    source: .authentication, subject: tenantID, key: tenantID, on: conn)
            }
            logger.warning("possible cloned UAF authenticator; key flagged")
            let error = UAFError(.signCounterNotIncreased, rule: "Protocol §3.5.7.5 step 4.f", "the signature counter did not increase")
            throw HTTPError(.uafSignInRefused(error), detail: error.description)
        }
        context.relay.notify()
        return result
    }
}

/// Thrown inside the recording transaction (rolling it back) when a counter did not increase.
private struct CounterNotIncreased: Error {
    let record: UAFRegistrationRecord
    let stored: Int64
    let presented: Int64
}

/// FIDO UAF as a sign-in step: AuthenticationRequest messages naming the user's keys not yet
/// used in this flow, then the client's response through ``UAFAssertionCeremony``.
///
/// In a flow that confirms a transaction (`flow.transactionId`) the step signs its details, as
/// a fido2 step does: the request's challenge is the dynamic-linking challenge of the details
/// hash and a nonce, and its transaction list is ``Schema/TransactionDetails/uafDisplayText`` as
/// `text/plain` plus the transaction's `image/png` forms (``FIDO/UAFTransactionConfirmation``):
/// the signed content hash may be that of any of them; verification derives both again from the transaction
/// as it is then (an amended transaction no longer matches), and the step's evidence goes to
/// the transaction service, which verifies it once more before issuing the tcToken.
struct UAFMethod: AuthenticationMethod {
    let ceremony: UAFAssertionCeremony
    let name = "uaf"
    let signsDetails = true

    /// What the flow keeps between challenge and verification.
    struct Pending: Codable {
        var challenge: String
        var serverData: String
        /// base64url nonce of the dynamic-linking challenge, when confirming a transaction.
        var nonce: String?
    }

    func capacity(for user: UserFacts) -> Int {
        user.username == nil ? 1 : user.uafKeys.count
    }

    /// The keys' state (``UAFAssertionCeremony/presentedKeys(_:tenant:expectedUsername:excluding:)``'s
    /// refusals) or the tenant's UAF policy, not a guess: the direct route does not count them
    /// either.
    func countsAsGuess(_ refusal: HTTPError) -> Bool { UAFAssertionCeremony.countsAsGuess(refusal) }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        let keys = user.uafKeys.filter { !flow.usedCredentials.contains($0.keyID) }
        if flow.username != nil, keys.isEmpty {
            throw HTTPError(.methodUnavailable, detail: "No UAF authenticator key of this user is left for this step.")
        }
        var pending = Pending(challenge: SecureRandom.token(byteCount: 32), serverData: SecureRandom.token(byteCount: 16))
        var transactions: [UAFTransaction] = []
        if let id = flow.transactionId {
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: ceremony.context.pool)
            let nonce = SecureRandom.bytes(16)
            pending.challenge = UAFTransactionConfirmation.challenge(detailsHash: tx.detailsHash, nonce: nonce)
            pending.nonce = Base64URL.encode(nonce)
            transactions = tx.details.uafTransactions
        }
        let messages = try await ceremony.requestMessages(
            tenant: tenant, keys: flow.username == nil ? nil : keys.map { ($0.aaid, $0.keyID) }, challenge: pending.challenge,
            serverData: pending.serverData, transactions: transactions)
        return MethodChallenge(
            response: try JSONValueEncoder().encodeToBytes(UAFRequestEnvelope(uafRequest: messages, expiresAt: flow.expiresAt)),
            pending: try JSONValueEncoder().encodeToBytes(pending))
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        let body = try request.decode(UAFResponseBody.self)
        guard let state = try? JSONValueDecoder().decode(Pending.self, from: pending) else {
            throw HTTPError(.invalidHandle, detail: "No UAF request is pending; ask for one.")
        }
        let response: UAFResponse
        do { response = try UAFMessageDecoding.response(body.uafResponse) } catch {
            throw HTTPError(.uafSignInRefused(error), detail: error.description, field: "uafResponse")
        }
        var challenge = state.challenge
        var shown: [UAFShownTransaction] = []
        var nonce: [UInt8]?
        if let id = flow.transactionId {
            // The transaction must still be pending, and its details now are the ones the
            // challenge and the displayed text commit to.
            guard let n = state.nonce.flatMap(Base64URL.decode), n.count == 16 else {
                throw HTTPError(.invalidHandle, detail: "No UAF request is pending for this transaction; ask for one.")
            }
            guard response.assertions.count == 1 else {
                throw HTTPError.invalid("uafResponse", "A transaction is confirmed by exactly one UAF assertion.")
            }
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: ceremony.context.pool)
            challenge = UAFTransactionConfirmation.challenge(detailsHash: tx.detailsHash, nonce: n)
            shown = tx.details.uafShown
            nonce = n
        }
        let verified = try await ceremony.verify(
            response, tenant: tenant, challenge: challenge, serverData: state.serverData, challengeExpiresAt: flow.expiresAt,
            expectedUsername: flow.username, shown: shown, excluding: Set(flow.usedCredentials),
            logger: .init(label: "signet.authentication.uaf"))
        var outcome = MethodOutcome(username: verified.username, userHandle: nil, credentialID: verified.keyID)
        if let nonce { outcome.evidence = verified.evidence(nonce: nonce) }
        return outcome
    }
}
