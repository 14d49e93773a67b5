import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Rules
import Schema
import ServiceKit

/// Adaptive sign-in, the flow itself: the tenant's rules choose what the user must prove
/// (start), the user walks one sequence of methods step by step (challenge, verify), and a
/// completed sequence yields a session, a registration suggestion and, for a sign-in that
/// confirms a transaction, the decision event. Quick authentication (one round trip) is in
/// `SignInCoordinator+Quick.swift`.
///
/// Flows are ``SignInFlowStore``'s, sessions ``SessionStore``'s, failure counts
/// ``AntiHammering``'s; the per-process ``RateLimiter`` is the first line against floods. The
/// HTTP side (``SignInRoutes``) decodes, calls and encodes.
struct SignInCoordinator: Sendable {
    let context: ServiceContext
    let policies: PolicyStore
    let methods: [any AuthenticationMethod]
    let antiHammering: AntiHammering
    let facts: UserFactsLoader
    let sessions: SessionStore
    let ceremony: AssertionCeremony
    let flows: SignInFlowStore
    let limiter: RateLimiter
    /// The tcTokens of confirmed transactions, from the transaction service.
    let transactions: TransactionTokens

    func method(_ name: String) -> (any AuthenticationMethod)? { methods.first { $0.name == name } }

    /// What rulesets may name: sequences of this coordinator's methods (a rule about
    /// transactions with a signing step in each), registration suggestions of methods users
    /// register (FIDO2 credentials and the registration service's other methods).
    var catalogs: [Ruleset.Kind: Ruleset.MethodCatalog] {
        let signing = Set(methods.filter(\.signsDetails).map(\.name))
        return [
            .authentication: Ruleset.MethodCatalog(
                known: Set(methods.map(\.name)), signing: signing, transactionFacts: PendingTransaction.contextFactPaths),
            .registration: Ruleset.MethodCatalog(
                known: Set(["fido2"] + MethodTypes.registrable), signing: signing, transactionFacts: PendingTransaction.contextFactPaths),
        ]
    }

    /// Counts a sign-in request against the tenant's limits: per client address and minute,
    /// per tenant and second.
    ///
    /// - Throws: 429 `too_many_requests` with `Retry-After`.
    func admit(client: String, tenant: String, settings: AuthenticationSettings) throws {
        try limiter.admit("ip/\(tenant)/\(client)", limit: settings.signInsPerMinutePerIP, per: .seconds(60))
        try limiter.admit("tenant/\(tenant)", limit: settings.signInsPerSecondPerTenant, per: .seconds(1))
    }

    // MARK: - Start

    /// Starts a sign-in: facts → rules → ALLOW (a session at once), DENY, or
    /// TRIGGER_AUTHENTICATION with the sequences the user can complete. A sign-in that confirms
    /// a transaction (`context.transactionId`) is bound to its user, and the rules see the
    /// transaction's own amount, type and payee, whatever the client says.
    ///
    /// - Throws: 404 `tenant_not_found`, `transaction_not_found`; 403 `forbidden` for another
    ///   user's transaction; 409 `transaction_not_pending`, `transaction_not_confirmable` (the
    ///   rule offers no sequence that signs the details); 429 `too_many_requests`.
    func start(
        tenant tenantID: String, username requested: String?, signals: [String: AnyJSON], context facts: [String: AnyJSON], client: String,
        logger: Logger
    ) async throws -> SignInStarted {
        guard try await context.tenants.find(tenantID) != nil else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: tenantID)
        try admit(client: client, tenant: tenantID, settings: policy.settings)
        let now = Date()
        var username = requested
        var facts = facts
        var transaction: PendingTransaction?
        if case .string(let id)? = facts["transactionId"] {
            let tx = try await PendingTransaction.load(id, tenant: tenantID, pool: context.pool, now: now)
            // The read model knows the user by subject reference: a username given is checked
            // against it; without one, the transaction service says whose it is (checked too).
            let key = context.configuration.subjectKey
            let owner: String
            if let username { owner = username } else { owner = try await transactions.username(id, tenant: tenantID) }
            guard ConstantTime.equals(key.ref(tenant: tenantID, username: owner), tx.subjectRef) else {
                throw HTTPError(.forbidden, detail: "This transaction is for another user.")
            }
            username = owner
            facts.merge(tx.contextFacts) { _, fromTransaction in fromTransaction }
            transaction = tx
        }
        let user = try await self.facts.load(tenant: tenantID, username: username, settings: policy.settings)
        let factDocument = UserFactsLoader.facts(signals: signals, context: facts, user: user, methods: methods, settings: policy.settings, now: now)
        let decision = policy.authentication.evaluate(factDocument)
        var expires = now.addingTimeInterval(Double(decision.maxTimeSeconds ?? RuleAction.defaultMaxTimeSeconds))
        if let transaction { expires = min(expires, transaction.expiresAt) }
        var flow = SignInFlow(
            id: SignInFlow.newID(), tenant: tenantID, username: username, status: .inProgress, matchedRule: decision.matchedRule,
            sequences: [], completed: [], usedCredentials: [], pendingMethod: nil, pendingState: nil, revision: 0, createdAt: now,
            expiresAt: expires)
        flow.transactionId = transaction?.id
        if username == nil {
            // Decided on an anonymous user: kept to decide again once a step identifies the user.
            flow.signals = signals
            flow.context = facts
        }
        switch decision.action {
        case .allow where transaction != nil:
            // Consent to a transaction is always signed: ALLOW still needs one passkey.
            flow.sequences = completable([["fido2"]], user: user, signals: signals, now: now)
            if flow.sequences.isEmpty { flow.status = .failed }
        case .allow:
            flow.status = .succeeded
        case .deny:
            flow.status = .denied
        case .triggerAuthentication where transaction != nil:
            // A transaction is confirmed by a signature over its details: sequences without a
            // signing step (OTPs alone) are dropped, and a rule that offers none is refused
            // here rather than letting a sign-in succeed that leaves the transaction PENDING.
            let signing = decision.sequences.filter { $0.contains { method($0)?.signsDetails == true } }
            guard !signing.isEmpty else {
                throw HTTPError(
                    .transactionNotConfirmable,
                    detail: "The rule \(decision.matchedRule) offers no sequence with a step that signs the transaction's details.")
            }
            flow.sequences = completable(signing, user: user, signals: signals, now: now)
            if flow.sequences.isEmpty { flow.status = .failed }
        case .triggerAuthentication:
            flow.sequences = completable(decision.sequences, user: user, signals: signals, now: now)
            if flow.sequences.isEmpty { flow.status = .failed }
        default:
            flow.status = .denied
        }
        // ALLOW is a sign-in too: registration suggestions follow it (no method completed, so
        // a NOT_NOW answer does not hold it back).
        let succeeds = flow.status == .succeeded && username != nil
        let suggestion = succeeds ? registrationSuggestion(policy: policy, user: user, completed: [], now: now) : nil
        let started = flow
        let granted = try await context.withTransaction { conn -> Granted? in
            try await flows.insert(started, on: conn)
            guard succeeds, let username else { return nil }
            // ALLOW: no method completed; the token says so (amr empty, acr "allow").
            return try await grant(
                signin: started.id, tenant: tenantID, username: username, userHandle: user.credentials.first?.userHandle, amr: [], acr: "allow",
                credentialID: nil, suggestion: suggestion, at: now, on: conn)
        }
        logger.info("sign-in started", metadata: ["signet.signin.action": .string(decision.actionName), "signet.signin.rule": .string(decision.matchedRule)])
        return SignInStarted(
            signinId: flow.id, action: decision.actionName, sequences: flow.sequences, matchedRule: decision.matchedRule, expiresAt: flow.expiresAt,
            status: flow.status.rawValue, sessionToken: granted?.sessionToken, refreshToken: granted?.refreshToken,
            registrationToken: granted?.registrationToken, registration: granted == nil ? nil : suggestion)
    }

    /// The sequences `user` can complete: every method known, available (registered often
    /// enough, not locked) and supported by the device (`signals.supportedMethods`, when sent; no `qr`
    /// step when `signals.qrSupported` is false).
    func completable(_ sequences: [[String]], user: UserFacts, signals: [String: AnyJSON], now: Date) -> [[String]] {
        var supported: Set<String>?
        if case .array(let list)? = signals["supportedMethods"] {
            supported = Set(list.compactMap { if case .string(let s) = $0 { s } else { nil } })
        }
        // An app that said it cannot scan QR codes is offered no `qr` step.
        let cannotScan = signals["qrSupported"] == .bool(false)
        return sequences.filter { sequence in
            if cannotScan, sequence.contains("qr") { return false }
            var needed: [String: Int] = [:]
            for m in sequence { needed[m, default: 0] += 1 }
            return needed.allSatisfy { name, count in
                guard let method = method(name), supported?.contains(name) ?? true else { return false }
                if user.failures.locked.contains(name) { return false }
                return method.capacity(for: user) >= count
            }
        }
    }

    // MARK: - Where a flow stands

    /// The sign-in's status and what is left; for a sign-in that confirms a transaction, where
    /// the transaction stands, with its tcToken once confirmed (only after the sign-in
    /// succeeded: the app that confirmed gets it with the result). The read model says when
    /// the transaction is CONFIRMED; the token itself comes from the transaction service.
    ///
    /// - Throws: 404 `signin_not_found`; 503 `service_unavailable` when the transaction service
    ///   cannot hand over the token of a confirmed transaction (ask again).
    func progress(of id: String, tenant: String) async throws -> SignInProgress {
        let flow = try await flows.load(id, tenant: tenant)
        var progress = Self.progress(flow)
        if let transactionID = flow.transactionId {
            var standing = try await PendingTransaction.standing(transactionID, tenant: flow.tenant, pool: context.pool)
            if flow.status == .succeeded, standing?.status == "CONFIRMED" {
                standing = try await transactions.standing(transactionID, tenant: flow.tenant)
            }
            progress.transaction = standing
        }
        return progress
    }

    static func progress(_ flow: SignInFlow) -> SignInProgress {
        SignInProgress(
            status: flow.status.rawValue, completedMethods: flow.completed,
            remainingSequences: flow.status == .inProgress ? flow.progress.remaining : [])
    }

    /// The flow `id`, in progress and not expired.
    ///
    /// - Throws: 404 `signin_not_found`; 409 `signin_finished`, `signin_expired`.
    func activeFlow(_ id: String, tenant: String) async throws -> SignInFlow {
        let flow = try await flows.load(id, tenant: tenant)
        guard flow.status == .inProgress else {
            throw HTTPError(.signInFinished, detail: "This sign-in is \(flow.status.rawValue); start again.")
        }
        guard flow.expiresAt > Date() else { throw HTTPError(.signInExpired, detail: "This sign-in took too long; start again.") }
        return flow
    }

    /// The method `name`, when a remaining sequence of `flow` has it as a next step.
    ///
    /// - Throws: 404 `not_found` for an unknown method; 409 `method_not_allowed_now`.
    func resolve(_ name: String, flow: SignInFlow) throws -> any AuthenticationMethod {
        guard let method = method(name) else { throw HTTPError(.notFound, detail: "Unknown method.") }
        guard flow.progress.allows(name) else {
            throw HTTPError(.methodNotAllowedNow, detail: "No remaining sequence of this sign-in has this method as a next step.")
        }
        return method
    }

    // MARK: - Registration suggestions

    /// What the tenant's registration decision rules say for the user now (the registration
    /// service asks before a registration).
    func registrationDecision(tenant: String, username: String) async throws -> RegistrationDecision {
        let policy = try await policies.policy(for: tenant)
        let user = try await facts.load(tenant: tenant, username: username, settings: policy.settings)
        let document = UserFactsLoader.facts(signals: [:], context: [:], user: user, methods: methods, settings: policy.settings, now: Date())
        let decision = policy.registration.evaluate(document)
        return RegistrationDecision(
            action: decision.actionName, methods: decision.methods, matchedRule: decision.matchedRule, answer: user.registrationAnswer,
            sequences: decision.registrationOffer?.sequences)
    }

    /// What registration decision rules ask after a sign-in that completed `completed`.
    func registrationSuggestion(policy: PolicyStore.Compiled, user: UserFacts, completed: [String], now: Date) -> RegistrationSuggestion? {
        let document = UserFactsLoader.facts(signals: [:], context: [:], user: user, methods: methods, settings: policy.settings, now: now)
        let decision = policy.registration.evaluate(document)
        return Self.suggestion(decision, answer: user.registrationAnswer, completed: completed)
    }

    /// The suggestion a sign-in result carries (the seed's rule): ENFORCE always shows;
    /// SUGGEST never while the user answered NEVER (until the RP resets it); after NOT_NOW it
    /// comes back at the next sign-in that used a weaker method, one that completed none of
    /// the methods suggested (an OTP sign-in when a passkey is suggested), not after a delay.
    static func suggestion(_ decision: RuleDecision, answer: String?, completed: [String]) -> RegistrationSuggestion? {
        switch decision.action {
        case .enforceRegistration(let offer):
            return RegistrationSuggestion(action: decision.actionName, methods: offer.methods, matchedRule: decision.matchedRule, sequences: offer.sequences)
        case .suggestRegistration(let offer):
            if answer == "NEVER" { return nil }
            if answer == "NOT_NOW", completed.contains(where: offer.offers) { return nil }
            return RegistrationSuggestion(action: decision.actionName, methods: offer.methods, matchedRule: decision.matchedRule, sequences: offer.sequences)
        default:
            return nil
        }
    }

    /// Remembers the user's answer to a suggestion, given with the sign-in that showed it
    /// (within its lifetime). `answer` reads the answer once the sign-in is found.
    ///
    /// - Throws: 404 `signin_not_found`; 409 `signin_not_succeeded`; 400 `invalid_field`.
    func answer(signin id: String, tenant: String, answer: () throws -> String) async throws {
        let flow = try await flows.load(id, tenant: tenant)
        guard flow.status == .succeeded, let username = flow.username, flow.expiresAt > Date() else {
            throw HTTPError(.signInNotSucceeded, detail: "Answer with a sign-in that succeeded.")
        }
        let answer = try answer()
        guard ["NOT_NOW", "NEVER"].contains(answer) else { throw HTTPError.invalid("answer", "answer must be NOT_NOW or NEVER.") }
        try await flows.rememberRegistrationAnswer(answer, tenant: flow.tenant, username: username, at: Date())
    }

    // MARK: - Rejecting a transaction

    /// The user refuses the transaction this sign-in confirms: the flow is REJECTED and the
    /// decision event is published. Only once the sign-in has verified a step (as the
    /// transaction's user: a transaction's sign-in is bound to its user from the start): a
    /// sign-in needs no authentication to start, so before that anyone who knows the
    /// transaction id could reject it.
    ///
    /// - Throws: 403 `authentication_required` before any step is verified; 409
    ///   `not_a_transaction`, `transaction_not_pending`, and ``activeFlow(_:tenant:)``'s.
    func reject(signin id: String, tenant: String, logger: Logger) async throws -> SignInProgress {
        var flow = try await activeFlow(id, tenant: tenant)
        guard let transactionID = flow.transactionId else { throw HTTPError(.notATransaction, detail: "This sign-in confirms no transaction.") }
        guard !flow.completed.isEmpty else {
            throw HTTPError(.authenticationRequired, detail: "Verify a step of this sign-in first; a rejection counts only from the transaction's user.")
        }
        let now = Date()
        let tx = try await PendingTransaction.load(transactionID, tenant: flow.tenant, pool: context.pool, now: now)
        flow.status = .rejected
        flow.pendingMethod = nil
        flow.pendingState = nil
        let rejected = flow
        flow = try await context.withTransaction { conn in
            var flow = rejected
            try await flows.save(&flow, on: conn)
            try await Outbox.enqueue(
                TransactionDecision(
                    tenantId: flow.tenant, transactionId: transactionID, decision: "rejected", detailsHash: Base64URL.encode(tx.detailsHash),
                    signinId: flow.id, amr: flow.completed, assertions: [], decidedAt: now),
                source: .authentication, subject: flow.tenant, key: flow.tenant, on: conn)
            return flow
        }
        logger.info("transaction rejected by the user")
        return Self.progress(flow)
    }
}
