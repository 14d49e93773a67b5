import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import Platform
import Rules
import Schema
import ServiceKit

/// Quick authentication: one round trip.
extension SignInCoordinator {
    /// Signs in with an assertion over a challenge the client derived from the time
    /// (`FIDO.QuickAuthChallenge`): the server accepts times within the tenant's window and
    /// records the challenge as used until the window has passed. The rules still decide: the
    /// fido2 step counts as done, and a sequence that needs more continues as a normal flow.
    /// For a transaction, the time-derived value is the nonce of its dynamic-linking challenge,
    /// so the one round trip also commits to the details shown.
    ///
    /// - Throws: 400 `quick_auth_time_out_of_window`, `invalid_field` or the assertion's
    ///   refusal; 423 `method_locked` / 429 `method_probation` (the user's fido2 standing);
    ///   403 `quick_auth_disabled` (the tenant switched it off); 404 `tenant_not_found`,
    ///   `transaction_not_found`; 409 `transaction_not_pending`;
    ///   429 `too_many_requests`.
    func quick(
        _ body: QuickSignInRequest, tenant tenantID: String, signals: [String: AnyJSON], context contextFacts: [String: AnyJSON], client: String,
        logger: Logger
    ) async throws -> QuickSignInResult {
        var contextFacts = contextFacts
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: tenantID)
        guard policy.settings.quickAuthEnabled else {
            throw HTTPError(.quickAuthDisabled, detail: "This tenant does not offer quick authentication; start a sign-in.")
        }
        try admit(client: client, tenant: tenantID, settings: policy.settings)
        let now = Date()
        let window = Double(policy.settings.quickAuthWindowSeconds)
        guard abs(Double(body.time) - now.timeIntervalSince1970) <= window else {
            throw HTTPError(
                .quickAuthTimeOutOfWindow, detail: "The time the challenge was derived from is more than \(Int(window)) s away from the server's clock.")
        }
        guard let rawID = Base64URL.decode(body.credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else {
            throw HTTPError.invalid("credential.rawId", "rawId must be base64url.")
        }
        var challenge = QuickAuthChallenge.derive(tenant: tenantID, credentialID: rawID, time: body.time)
        var transaction: PendingTransaction?
        var nonce: [UInt8]?
        if case .string(let id)? = contextFacts["transactionId"] {
            let tx = try await PendingTransaction.load(id, tenant: tenantID, pool: context.pool, now: now)
            let derived = Array(challenge.prefix(16))
            nonce = derived
            challenge = DynamicLinkingChallenge.derive(detailsHash: tx.detailsHash, nonce: derived)
            contextFacts.merge(tx.contextFacts) { _, fromTransaction in fromTransaction }
            transaction = tx
        }
        // Used until no time the window accepts can derive it again.
        let usedUntil = Date(timeIntervalSince1970: Double(body.time) + window + 1)
        // The credential names the user, whose fido2 standing holds here as in a flow, and the
        // guess is counted as a flow's fido2 step counts it: reserved before the assertion is
        // evaluated (a method locked or on probation refuses it), a refusal stands as a
        // failure, a success clears the count. The facts are the user's before this guess.
        guard let owner = try await ceremony.owner(of: body.credential, tenant: tenantID) else {
            throw HTTPError.invalid("credential.rawId", "rawId must be base64url.")
        }
        let user = try await facts.load(tenant: tenantID, username: owner, settings: policy.settings)
        let verified = try await antiHammering.counted(
            tenant: tenantID, username: owner, method: "fido2", settings: policy.settings, now: now, logger: logger
        ) {
            try await ceremony.verify(
                body.credential, tenant: tenant, challenge: challenge, challengeExpiresAt: usedUntil, expectedUsername: nil,
                userVerification: "preferred", sessionID: nil, expectedSubjectRef: transaction?.subjectRef, logger: logger)
        }
        let document = UserFactsLoader.facts(signals: signals, context: contextFacts, user: user, methods: methods, settings: policy.settings, now: now)
        let decision = policy.authentication.evaluate(document)
        var flow = SignInFlow(
            id: SignInFlow.newID(), tenant: tenantID, username: verified.username, status: .inProgress, matchedRule: decision.matchedRule,
            sequences: [], completed: ["fido2"], usedCredentials: [verified.credentialID], pendingMethod: nil, pendingState: nil, revision: 0,
            createdAt: now, expiresAt: now.addingTimeInterval(Double(decision.maxTimeSeconds ?? RuleAction.defaultMaxTimeSeconds)))
        flow.transactionId = transaction?.id
        if let nonce {
            flow.evidence = [
                SignedAssertionEvidence(
                    credentialId: verified.credentialID, authenticatorData: Base64URL.encode(verified.authenticatorData),
                    clientDataJSON: Base64URL.encode(verified.clientDataJSON), signature: Base64URL.encode(verified.signature),
                    publicKeyCose: Base64URL.encode(verified.publicKeyCOSE), nonce: Base64URL.encode(nonce))
            ]
        }
        var acr = "fido2"
        switch decision.action {
        case .allow:
            flow.status = .succeeded
        case .triggerAuthentication:
            // Sequences the user could complete, counting the fido2 step already done.
            flow.sequences = completable(decision.sequences, user: user, signals: signals, now: now)
            if let satisfied = flow.progress.satisfied {
                flow.status = .succeeded
                acr = satisfied.joined(separator: "+")
            } else if flow.progress.isExhausted {
                flow.status = .failed
            }
        default:
            flow.status = .denied
        }
        // A quick sign-in is a sign-in: registration suggestions follow it.
        let suggestion = flow.status == .succeeded ? registrationSuggestion(policy: policy, user: user, completed: flow.completed, now: now) : nil
        let started = flow
        if started.status == .denied || started.status == .failed {
            // The step was right but the sign-in refused: neither a failure nor a success.
            try? await antiHammering.releaseAttempt(tenant: tenantID, username: owner, method: "fido2", settings: policy.settings)
        }
        let granted = try await context.withTransaction { conn -> Granted? in
            try await flows.insert(started, on: conn)
            if started.status == .succeeded || started.status == .inProgress {
                try await antiHammering.recordSuccess(tenant: tenantID, username: owner, method: "fido2", on: conn)
            }
            guard started.status == .succeeded else { return nil }
            if let transaction {
                try await Outbox.enqueue(
                    TransactionDecision(
                        tenantId: tenantID, transactionId: transaction.id, decision: "confirmed", detailsHash: Base64URL.encode(transaction.detailsHash),
                        signinId: started.id, amr: started.completed, assertions: started.evidence, decidedAt: now),
                    source: .authentication, subject: tenantID, key: tenantID, on: conn)
            }
            return try await grant(
                signin: started.id, tenant: tenantID, username: verified.username, userHandle: Base64URL.encode(verified.userHandle), amr: ["fido2"],
                acr: acr, credentialID: verified.credentialID, suggestion: suggestion, at: now, on: conn)
        }
        return QuickSignInResult(
            signinId: flow.id, action: decision.actionName, matchedRule: decision.matchedRule, status: flow.status.rawValue, completedMethods: flow.completed,
            remainingSequences: flow.status == .inProgress ? flow.progress.remaining : [], sessionToken: granted?.sessionToken,
            refreshToken: granted?.refreshToken, registrationToken: granted?.registrationToken, expiresAt: granted?.expiresAt, registration: suggestion)
    }
}
