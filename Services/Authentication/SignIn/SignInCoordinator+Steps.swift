import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

/// One step of a sign-in: a method's challenge, then its verification, counted by
/// anti-hammering. The step that completes a sequence issues the session.
extension SignInCoordinator {
    /// Starts the step of `methodName`: the method's challenge (its pending state kept in the
    /// flow, its messages in the outbox).
    ///
    /// - Returns: the challenge body for the client (JSON).
    /// - Throws: ``activeFlow(_:tenant:)``'s and ``resolve(_:flow:)``'s; 423 `method_locked`;
    ///   429 `method_probation` or `too_many_requests`; the method's refusals.
    func challenge(signin id: String, tenant: String, method methodName: String, request: HTTPRequest, client: String) async throws -> [UInt8] {
        var flow = try await activeFlow(id, tenant: tenant)
        let method = try resolve(methodName, flow: flow)
        guard let tenant = try await context.tenants.find(flow.tenant) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: flow.tenant)
        try admit(client: client, tenant: flow.tenant, settings: policy.settings)
        let now = Date()
        let user = try await facts.load(tenant: flow.tenant, username: flow.username, settings: policy.settings)
        try AntiHammering.require(user.failures.standing(method.name, now: now), now: now)
        let started = try await method.challenge(flow: flow, user: user, tenant: tenant, request: request)
        flow.pendingMethod = method.name
        flow.pendingState = started.pending
        let pending = flow
        try await context.withTransaction { conn in
            var flow = pending
            try await flows.save(&flow, on: conn)
            for envelope in started.outbox {
                try await Outbox.enqueue(envelope, topic: Topic.deliveryRequests, key: flow.tenant, on: conn)
            }
        }
        return started.response
    }

    /// Verifies the pending step of `methodName`. The guess is counted before it is evaluated;
    /// a refusal (400) counts as a failure (unless the method says it is no guess,
    /// ``AuthenticationMethod/countsAsGuess(_:)``), anything else gives the guess back. The step that
    /// completes a sequence issues the session (and, for a transaction, publishes the
    /// confirmation with the signed evidence). The step that identifies the user of a sign-in
    /// started without a username is counted against that user's standing and has the rules
    /// decide again (``decideAgain(_:user:policy:now:)``): it may answer DENIED or FAILED.
    ///
    /// The query `refreshToken=false` asks for a session without a refresh token (none is made):
    /// for a caller that would only keep it in a web page's memory, such as the demo page's
    /// gateway route for the `qr` step.
    ///
    /// - Returns: the progress, with the session and a registration suggestion when it succeeded.
    /// - Throws: ``challenge(signin:tenant:method:request:client:)``'s; 400 `invalid_field`
    ///   (`refreshToken` other than true or false); 409 `no_pending_challenge`; 400 with the
    ///   method's refusal, or `credential_not_allowed` for another user's credential.
    func verify(signin id: String, tenant: String, method methodName: String, request: HTTPRequest, client: String, logger: Logger) async throws
        -> SignInProgress
    {
        var refreshable = true
        if let text = request.query["refreshToken"] {
            guard text == "true" || text == "false" else { throw HTTPError.invalid("refreshToken", "refreshToken is true or false.") }
            refreshable = text == "true"
        }
        var flow = try await activeFlow(id, tenant: tenant)
        let method = try resolve(methodName, flow: flow)
        guard let tenant = try await context.tenants.find(flow.tenant) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: flow.tenant)
        try admit(client: client, tenant: flow.tenant, settings: policy.settings)
        guard flow.pendingMethod == method.name, let pending = flow.pendingState else {
            throw HTTPError(.noPendingChallenge, detail: "Ask for this method's challenge first.")
        }
        let now = Date()
        // The guess is counted before it is evaluated (atomically: parallel guesses cannot
        // all pass a check made before any of them is counted).
        if let username = flow.username {
            let standing = try await antiHammering.reserveAttempt(
                tenant: flow.tenant, username: username, method: method.name, settings: policy.settings, now: now)
            try AntiHammering.require(standing, now: now)
        }
        // The challenge is used up whatever happens next, except a one-time code mistyped:
        // that guess is counted (below) and the code stays pending for the next.
        flow.pendingMethod = nil
        flow.pendingState = nil
        let outcome: MethodOutcome
        do {
            outcome = try await method.verify(flow: flow, pending: pending, tenant: tenant, request: request)
        } catch let error as HTTPError where error.code.status == 400 {
            if error.code == .codeMismatch, let kept = method.pendingAfterMismatch(pending) {
                flow.pendingMethod = method.name
                flow.pendingState = kept
            }
            try await flows.save(&flow)
            if let username = flow.username {
                if method.countsAsGuess(error) {
                    let standing = try await antiHammering.recordFailure(
                        tenant: flow.tenant, username: username, method: method.name, settings: policy.settings, now: now)
                    if standing == .locked {
                        logger.warning("method locked after repeated failures", metadata: ["signet.method": .string(method.name)])
                    }
                } else {
                    // The credential's state or the tenant's policy, not a guess: given back.
                    try? await antiHammering.releaseAttempt(tenant: flow.tenant, username: username, method: method.name, settings: policy.settings)
                }
            }
            throw error
        } catch {
            // Not a wrong answer (only those count): the server or another service failed, or
            // the step was refused for another reason. The guess is given back.
            if let username = flow.username {
                try? await antiHammering.releaseAttempt(tenant: flow.tenant, username: username, method: method.name, settings: policy.settings)
            }
            throw error
        }
        if let expected = flow.username, !UsernameRules.identical(expected, outcome.username) {
            throw HTTPError(.credentialNotAllowed, detail: "This credential belongs to someone else.")
        }
        // A sign-in started without a username: this step identified the user, whose standing
        // the step could not be counted against before. The user's facts are read before it
        // is (the rules see the failures the start would have seen); a locked method or one on
        // probation refuses the step as it would have with the username (the challenge is used).
        var identified: UserFacts?
        if flow.username == nil {
            let user = try await facts.load(tenant: flow.tenant, username: outcome.username, settings: policy.settings)
            let standing = try await antiHammering.reserveAttempt(
                tenant: flow.tenant, username: outcome.username, method: method.name, settings: policy.settings, now: now)
            if standing != .clear {
                try await flows.save(&flow)
                try AntiHammering.require(standing, now: now)
            }
            identified = user
        }
        flow.username = outcome.username
        flow.completed.append(method.name)
        if let id = outcome.credentialID { flow.usedCredentials.append(id) }
        if let evidence = outcome.evidence { flow.evidence.append(evidence) }
        if let user = identified, flow.transactionId == nil {
            // The rules decide again with the user's facts: DENY, or no sequence left that the
            // user can complete and that accounts for this step, ends the sign-in here.
            decideAgain(&flow, user: user, policy: policy, now: now)
            if flow.status != .inProgress {
                try await flows.save(&flow)
                // The step was right but the sign-in refused: neither a failure nor a success.
                try? await antiHammering.releaseAttempt(tenant: flow.tenant, username: outcome.username, method: method.name, settings: policy.settings)
                logger.info(
                    "sign-in refused once its user was identified",
                    metadata: ["signet.signin.status": .string(flow.status.rawValue), "signet.signin.rule": .string(flow.matchedRule)])
                return Self.progress(flow)
            }
        }
        guard let satisfied = flow.progress.satisfied else {
            let stepped = flow
            flow = try await context.withTransaction { conn in
                var flow = stepped
                try await flows.save(&flow, on: conn)
                try await antiHammering.recordSuccess(tenant: flow.tenant, username: outcome.username, method: method.name, on: conn)
                return flow
            }
            return Self.progress(flow)
        }
        flow.status = .succeeded
        let user = try await facts.load(tenant: flow.tenant, username: outcome.username, settings: policy.settings)
        let suggestion = registrationSuggestion(policy: policy, user: user, completed: flow.completed, now: now)
        var decision: TransactionDecision?
        if let id = flow.transactionId {
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: context.pool, now: now)
            decision = TransactionDecision(
                tenantId: flow.tenant, transactionId: id, decision: "confirmed", detailsHash: Base64URL.encode(tx.detailsHash), signinId: flow.id,
                amr: flow.completed, assertions: flow.evidence, decidedAt: now)
        }
        let succeeded = flow
        let (saved, granted) = try await context.withTransaction { conn -> (SignInFlow, Granted) in
            var flow = succeeded
            try await flows.save(&flow, on: conn)
            if let decision {
                try await Outbox.enqueue(decision, source: .authentication, subject: flow.tenant, key: flow.tenant, on: conn)
            }
            try await antiHammering.recordSuccess(tenant: flow.tenant, username: outcome.username, method: method.name, on: conn)
            // A session, or under ENFORCE_REGISTRATION a registration-only token.
            // `cid` names a credential (fido2, uaf), never a code method's step (`m:<id>`).
            let granted = try await grant(
                signin: flow.id, tenant: flow.tenant, username: outcome.username, userHandle: outcome.userHandle, amr: flow.completed,
                acr: satisfied.joined(separator: "+"), credentialID: outcome.credentialID.flatMap { $0.hasPrefix("m:") ? nil : $0 }, suggestion: suggestion, refreshable: refreshable, at: now,
                on: conn)
            return (flow, granted)
        }
        logger.info("sign-in succeeded", metadata: ["signet.signin.acr": .string(satisfied.joined(separator: "+"))])
        var body = Self.progress(saved)
        body.sessionToken = granted.sessionToken
        body.refreshToken = granted.refreshToken
        body.registrationToken = granted.registrationToken
        body.expiresAt = granted.expiresAt
        body.registration = suggestion
        if let decision {
            // The transaction service confirms it from the decision event and issues the
            // tcToken; `GET …/signins/{id}` hands it back once it has.
            body.transaction = SignInTransaction(transactionId: decision.transactionId, status: "PENDING")
        }
        return body
    }
}
