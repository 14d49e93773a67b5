import Crypto
import FIDO
import Foundation
import HTTPServer
import Platform
import Postgres
import Rules
import Schema
import ServiceKit
import Tokens

/// Adaptive sign-in: the tenant's rules choose what the user must prove, the flow walks the
/// user through one sequence of methods, and a completed sequence yields a session.
///
/// - `POST /v1/tenants/{tenant}/signins`: facts → rules → ALLOW (session at once), DENY, or
///   TRIGGER_AUTHENTICATION with the sequences the user can complete.
/// - `POST …/signins/{id}/methods/{method}/challenge` and `…/verify`: one step.
/// - `GET …/signins/{id}`: where the flow stands.
struct SignInRoutes: Sendable {
    let context: ServiceContext
    let policies: PolicyStore
    let methods: [any AuthenticationMethod]
    let antiHammering: AntiHammering
    let facts: UserFactsLoader
    let sessions: SessionStore
    let ceremony: AssertionCeremony
    let calls: InternalCalls
    let limiter = RateLimiter()

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/signins", .open) { request, ctx in try await start(request, ctx) }
        router.post("/v1/tenants/{tenant}/signins/quick", .open) { request, ctx in try await quick(request, ctx) }
        router.post("/v1/internal/tenants/{tenant}/registration-decision", calls.guardInternal) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(RegistrationDecisionRequest.self)
            try UsernameRules.require(body.username)
            let policy = try await policies.policy(for: tenant)
            let user = try await facts.load(tenant: tenant, username: body.username, settings: policy.settings)
            let document = UserFactsLoader.facts(signals: [:], context: [:], user: user, methods: methods, settings: policy.settings, now: Date())
            let decision = policy.registration.evaluate(document)
            return try .json(RegistrationDecision(action: decision.actionName, methods: decision.methods, matchedRule: decision.matchedRule))
        }
        router.get("/v1/tenants/{tenant}/signins/{signinId}", .open) { _, ctx in
            let flow = try await SignInFlow.load(ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), pool: context.pool)
            return try .json(progressBody(flow), headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/challenge", .open) { request, ctx in try await challenge(request, ctx) }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/verify", .open) { request, ctx in try await verify(request, ctx) }
        router.put("/v1/tenants/{tenant}/signins/{signinId}/registration-answer", .open) { request, ctx in try await answer(request, ctx) }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/reject", .open) { _, ctx in try await reject(ctx) }
    }

    func method(_ name: String) -> (any AuthenticationMethod)? { methods.first { $0.name == name } }

    /// The address the gateway saw: the last `X-Forwarded-For` entry (the gateway appends it;
    /// earlier entries are the client's to write).
    static func clientIP(_ request: HTTPRequest) -> String {
        request.header("X-Forwarded-For")?.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "direct"
    }

    /// A sign-in's signals and context, bounded (64 members each, 8 levels); `signals.ip`
    /// defaults to the address the gateway saw.
    static func signalsAndContext(
        _ signals: [String: AnyJSON]?, _ context: [String: AnyJSON]?, request: HTTPRequest
    ) throws -> ([String: AnyJSON], [String: AnyJSON]) {
        var signals = signals ?? [:]
        let context = context ?? [:]
        guard signals.count <= 64, context.count <= 64, AnyJSON.object(signals).depth <= 8, AnyJSON.object(context).depth <= 8 else {
            throw HTTPError.invalid("signals", "signals and context hold at most 64 members each, nested at most 8 deep.")
        }
        if signals["ip"] == nil { signals["ip"] = .string(clientIP(request)) }
        return (signals, context)
    }

    func admit(_ request: HTTPRequest, tenant: String, settings: AuthenticationSettings) throws {
        try limiter.admit("ip/\(tenant)/\(Self.clientIP(request))", limit: settings.signInsPerMinutePerIP, per: .seconds(60))
        try limiter.admit("tenant/\(tenant)", limit: settings.signInsPerSecondPerTenant, per: .seconds(1))
    }

    // MARK: - Start

    func start(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = request.body.isEmpty ? SignInStartRequest() : try request.decode(SignInStartRequest.self)
        if let u = body.username { try UsernameRules.require(u) }
        let (signals, context) = try Self.signalsAndContext(body.signals, body.context, request: request)
        guard try await self.context.tenants.find(tenantID) != nil else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: tenantID)
        try admit(request, tenant: tenantID, settings: policy.settings)
        let now = Date()
        // A sign-in that confirms a transaction: bound to its user, and the rules see the
        // transaction's own amount, type and payee, whatever the client says.
        var username = body.username
        var facts = context
        var transaction: PendingTransaction?
        if case .string(let id)? = context["transactionId"] {
            let tx = try await PendingTransaction.load(id, tenant: tenantID, pool: self.context.pool, now: now)
            if let username, !UsernameRules.identical(username, tx.username) {
                throw HTTPError(.forbidden, detail: "This transaction is for another user.")
            }
            username = tx.username
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
        var issued: SessionStore.Issued?
        switch decision.action {
        case .allow where transaction != nil:
            // Consent to a transaction is always signed: ALLOW still needs one passkey.
            flow.sequences = completable([["fido2"]], user: user, signals: signals, now: now)
            if flow.sequences.isEmpty { flow.status = .failed }
        case .allow:
            flow.status = .succeeded
        case .deny:
            flow.status = .denied
        case .triggerAuthentication:
            flow.sequences = completable(decision.sequences, user: user, signals: signals, now: now)
            if flow.sequences.isEmpty { flow.status = .failed }
        default:
            flow.status = .denied
        }
        try await self.context.withTransaction { conn in
            try await flow.insert(on: conn)
            if flow.status == .succeeded, let username {
                // ALLOW: no method completed; the token says so (amr empty, acr "allow").
                issued = try await sessions.create(
                    tenant: tenantID, username: username, userHandle: user.credentials.first?.userHandle, amr: [], acr: "allow", credentialID: nil,
                    at: now, on: conn)
                try await recordSignIn(tenant: tenantID, username: username, at: now, on: conn)
            }
        }
        ctx.logger.info("sign-in started", metadata: ["signet.signin.action": .string(decision.actionName), "signet.signin.rule": .string(decision.matchedRule)])
        let response = SignInStarted(
            signinId: flow.id, action: decision.actionName, sequences: flow.sequences, matchedRule: decision.matchedRule, expiresAt: flow.expiresAt,
            status: flow.status.rawValue, sessionToken: issued?.accessToken, refreshToken: issued?.refreshToken)
        return try .json(response, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// The sequences `user` can complete: every method known, available (registered often
    /// enough, not locked) and supported by the device (`signals.supportedMethods`, when sent).
    func completable(_ sequences: [[String]], user: UserFacts, signals: [String: AnyJSON], now: Date) -> [[String]] {
        var supported: Set<String>?
        if case .array(let list)? = signals["supportedMethods"] {
            supported = Set(list.compactMap { if case .string(let s) = $0 { s } else { nil } })
        }
        return sequences.filter { sequence in
            var needed: [String: Int] = [:]
            for m in sequence { needed[m, default: 0] += 1 }
            return needed.allSatisfy { name, count in
                guard let method = method(name), supported?.contains(name) ?? true else { return false }
                if user.failures.locked.contains(name) { return false }
                return method.capacity(for: user) >= count
            }
        }
    }

    // MARK: - Steps

    /// The flow of the path, in progress and not expired.
    func activeFlow(_ ctx: RequestContext) async throws -> SignInFlow {
        let flow = try await SignInFlow.load(ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), pool: context.pool)
        guard flow.status == .inProgress else {
            throw HTTPError(ProblemCode("signin_finished", status: 409, title: "Sign-in finished"), detail: "This sign-in is \(flow.status.rawValue); start again.")
        }
        guard flow.expiresAt > Date() else {
            throw HTTPError(ProblemCode("signin_expired", status: 409, title: "Sign-in expired"), detail: "This sign-in took too long; start again.")
        }
        return flow
    }

    func resolve(_ ctx: RequestContext, flow: SignInFlow) throws -> any AuthenticationMethod {
        let name = ctx.parameter("method")
        guard let method = method(name) else { throw HTTPError(.notFound, detail: "Unknown method.") }
        guard flow.progress.allows(name) else {
            throw HTTPError(
                ProblemCode("method_not_allowed_now", status: 409, title: "Method not expected"),
                detail: "No remaining sequence of this sign-in has this method as a next step.")
        }
        return method
    }

    func challenge(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        var flow = try await activeFlow(ctx)
        let method = try resolve(ctx, flow: flow)
        guard let tenant = try await context.tenants.find(flow.tenant) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: flow.tenant)
        try admit(request, tenant: flow.tenant, settings: policy.settings)
        let now = Date()
        let user = try await facts.load(tenant: flow.tenant, username: flow.username, settings: policy.settings)
        try AntiHammering.require(user.failures.standing(method.name, now: now), now: now)
        let started = try await method.challenge(flow: flow, user: user, tenant: tenant, request: request)
        flow.pendingMethod = method.name
        flow.pendingState = started.pending
        try await context.withTransaction { conn in
            try await flow.save(on: conn)
            for envelope in started.outbox {
                try await Outbox.enqueue(envelope, topic: Topic.deliveryRequests, key: flow.tenant, on: conn)
            }
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: started.response)
    }

    func verify(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        var flow = try await activeFlow(ctx)
        let method = try resolve(ctx, flow: flow)
        guard let tenant = try await context.tenants.find(flow.tenant) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: flow.tenant)
        try admit(request, tenant: flow.tenant, settings: policy.settings)
        guard flow.pendingMethod == method.name, let pending = flow.pendingState else {
            throw HTTPError(ProblemCode("no_pending_challenge", status: 409, title: "No challenge"), detail: "Ask for this method's challenge first.")
        }
        let now = Date()
        // The guess is counted before it is evaluated (atomically: parallel guesses cannot
        // all pass a check made before any of them is counted).
        if let username = flow.username {
            let standing = try await antiHammering.reserveAttempt(
                tenant: flow.tenant, username: username, method: method.name, settings: policy.settings, now: now)
            try AntiHammering.require(standing, now: now)
        }
        // The challenge is used up whatever happens next.
        flow.pendingMethod = nil
        flow.pendingState = nil
        let outcome: MethodOutcome
        do {
            outcome = try await method.verify(flow: flow, pending: pending, tenant: tenant, request: request)
        } catch let error as HTTPError where error.code.status == 400 {
            try await context.pool.withConnection { conn in try await flow.save(on: conn) }
            if let username = flow.username {
                let standing = try await antiHammering.recordFailure(
                    tenant: flow.tenant, username: username, method: method.name, settings: policy.settings, now: now)
                if standing == .locked {
                    ctx.logger.warning("method locked after repeated failures", metadata: ["signet.method": .string(method.name)])
                }
            }
            throw error
        } catch {
            // Not a wrong answer (only those count, as before): the server or another service
            // failed, or the step was refused for another reason. The guess is given back.
            if let username = flow.username {
                try? await antiHammering.releaseAttempt(tenant: flow.tenant, username: username, method: method.name, settings: policy.settings)
            }
            throw error
        }
        if let expected = flow.username, !UsernameRules.identical(expected, outcome.username) {
            throw HTTPError.signInRefused("credential_not_allowed", "This credential belongs to someone else.")
        }
        flow.username = outcome.username
        flow.completed.append(method.name)
        if let id = outcome.credentialID { flow.usedCredentials.append(id) }
        if let evidence = outcome.evidence { flow.evidence.append(evidence) }
        var issued: SessionStore.Issued?
        var suggestion: RegistrationSuggestion?
        if let satisfied = flow.progress.satisfied {
            flow.status = .succeeded
            let user = try await facts.load(tenant: flow.tenant, username: outcome.username, settings: policy.settings)
            suggestion = registrationSuggestion(policy: policy, user: user, now: now)
            var decision: TransactionDecision?
            if let id = flow.transactionId {
                let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: context.pool, now: now)
                decision = TransactionDecision(
                    tenantId: flow.tenant, transactionId: id, decision: "confirmed", detailsHash: Base64URL.encode(tx.detailsHash), signinId: flow.id,
                    amr: flow.completed, assertions: flow.evidence, decidedAt: now)
            }
            try await context.withTransaction { conn in
                try await flow.save(on: conn)
                if let decision {
                    try await Outbox.enqueue(decision, source: .authentication, subject: flow.tenant, key: flow.tenant, on: conn)
                }
                try await antiHammering.recordSuccess(tenant: flow.tenant, username: outcome.username, method: method.name, on: conn)
                issued = try await sessions.create(
                    tenant: flow.tenant, username: outcome.username, userHandle: outcome.userHandle, amr: flow.completed,
                    acr: satisfied.joined(separator: "+"), credentialID: outcome.credentialID, at: now, on: conn)
                try await recordSignIn(tenant: flow.tenant, username: outcome.username, at: now, on: conn)
            }
            ctx.logger.info("sign-in succeeded", metadata: ["signet.signin.acr": .string(satisfied.joined(separator: "+"))])
        } else {
            try await context.withTransaction { conn in
                try await flow.save(on: conn)
                try await antiHammering.recordSuccess(tenant: flow.tenant, username: outcome.username, method: method.name, on: conn)
            }
        }
        var body = progressBody(flow)
        body.sessionToken = issued?.accessToken
        body.refreshToken = issued?.refreshToken
        body.expiresAt = issued?.expiresAt
        body.registration = suggestion
        return try .json(body, headers: [("Cache-Control", "no-store")])
    }

    func progressBody(_ flow: SignInFlow) -> SignInProgress {
        SignInProgress(
            status: flow.status.rawValue, completedMethods: flow.completed,
            remainingSequences: flow.status == .inProgress ? flow.progress.remaining : [])
    }

    func recordSignIn(tenant: String, username: String, at now: Date, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO user_state (tenant_id, username, last_signin_at) VALUES (\(tenant), \(username), \(now))
            ON CONFLICT (tenant_id, username) DO UPDATE SET last_signin_at = EXCLUDED.last_signin_at
            """)
    }

    // MARK: - Registration suggestions

    /// What registration decision rules ask after a sign-in: ENFORCE always shows; SUGGEST
    /// not while the user answered NEVER, nor for 7 days after NOT_NOW.
    func registrationSuggestion(policy: PolicyStore.Compiled, user: UserFacts, now: Date) -> RegistrationSuggestion? {
        let document = UserFactsLoader.facts(signals: [:], context: [:], user: user, methods: methods, settings: policy.settings, now: now)
        let decision = policy.registration.evaluate(document)
        switch decision.action {
        case .enforceRegistration(let methods):
            return RegistrationSuggestion(action: decision.actionName, methods: methods, matchedRule: decision.matchedRule)
        case .suggestRegistration(let methods):
            if user.registrationAnswer == "NEVER" { return nil }
            if user.registrationAnswer == "NOT_NOW", let at = user.registrationAnsweredAt, now.timeIntervalSince(at) < 7 * 86_400 { return nil }
            return RegistrationSuggestion(action: decision.actionName, methods: methods, matchedRule: decision.matchedRule)
        default:
            return nil
        }
    }

    /// `PUT …/signins/{id}/registration-answer`: the user's answer to a suggestion, given
    /// with the sign-in that showed it (within its lifetime).
    func answer(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let flow = try await SignInFlow.load(ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), pool: context.pool)
        guard flow.status == .succeeded, let username = flow.username, flow.expiresAt > Date() else {
            throw HTTPError(ProblemCode("signin_not_succeeded", status: 409, title: "Sign-in not complete"), detail: "Answer with a sign-in that succeeded.")
        }
        let body = try request.decode(RegistrationAnswerRequest.self)
        guard ["NOT_NOW", "NEVER"].contains(body.answer) else { throw HTTPError.invalid("answer", "answer must be NOT_NOW or NEVER.") }
        let now = Date()
        try await context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO user_state (tenant_id, username, registration_answer, registration_answered_at)
                VALUES (\(flow.tenant), \(username), \(body.answer), \(now))
                ON CONFLICT (tenant_id, username) DO UPDATE SET registration_answer = EXCLUDED.registration_answer,
                    registration_answered_at = EXCLUDED.registration_answered_at
                """)
        }
        return HTTPResponse(status: 204)
    }

    // MARK: - Quick authentication

    /// `POST …/signins/quick`: one round trip. The client derived the challenge from the time
    /// (`FIDO.QuickAuthChallenge`); the server accepts times within the tenant's window and
    /// records the challenge as used until the window has passed. The rules still decide: the
    /// fido2 step counts as done, and a sequence that needs more continues as a normal flow.
    func quick(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = try request.decode(QuickSignInRequest.self)
        var (signals, contextFacts) = try Self.signalsAndContext(body.signals, body.context, request: request)
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        let policy = try await policies.policy(for: tenantID)
        try admit(request, tenant: tenantID, settings: policy.settings)
        let now = Date()
        let window = Double(policy.settings.quickAuthWindowSeconds)
        guard abs(Double(body.time) - now.timeIntervalSince1970) <= window else {
            throw HTTPError.signInRefused("quick_auth_time_out_of_window", "The time the challenge was derived from is more than \(Int(window)) s away from the server's clock.")
        }
        guard let rawID = Base64URL.decode(body.credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else {
            throw HTTPError.invalid("credential.rawId", "rawId must be base64url.")
        }
        var challenge = QuickAuthChallenge.derive(tenant: tenantID, credentialID: rawID, time: body.time)
        // A transaction: the time-derived value is the nonce of its dynamic-linking challenge,
        // so the one round trip also commits to the details shown.
        var transaction: PendingTransaction?
        var nonce: [UInt8]?
        if case .string(let id)? = contextFacts["transactionId"] {
            let tx = try await PendingTransaction.load(id, tenant: tenantID, pool: context.pool, now: now)
            nonce = Array(challenge.prefix(16))
            challenge = DynamicLinkingChallenge.derive(detailsHash: tx.detailsHash, nonce: nonce!)
            contextFacts.merge(tx.contextFacts) { _, fromTransaction in fromTransaction }
            transaction = tx
        }
        // Used until no time the window accepts can derive it again.
        let usedUntil = Date(timeIntervalSince1970: Double(body.time) + window + 1)
        let verified = try await ceremony.verify(
            body.credential, tenant: tenant, challenge: challenge, challengeExpiresAt: usedUntil, expectedUsername: transaction?.username,
            userVerification: "preferred", sessionID: nil, logger: ctx.logger)
        let user = try await facts.load(tenant: tenantID, username: verified.username, settings: policy.settings)
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
            let sequences = completable(decision.sequences, user: user, signals: signals, now: now)
            flow.sequences = sequences
            if let satisfied = flow.progress.satisfied {
                flow.status = .succeeded
                acr = satisfied.joined(separator: "+")
            } else if flow.progress.isExhausted {
                flow.status = .failed
            }
        default:
            flow.status = .denied
        }
        var issued: SessionStore.Issued?
        try await context.withTransaction { conn in
            try await flow.insert(on: conn)
            if flow.status == .succeeded, let transaction {
                try await Outbox.enqueue(
                    TransactionDecision(
                        tenantId: tenantID, transactionId: transaction.id, decision: "confirmed", detailsHash: Base64URL.encode(transaction.detailsHash),
                        signinId: flow.id, amr: flow.completed, assertions: flow.evidence, decidedAt: now),
                    source: .authentication, subject: tenantID, key: tenantID, on: conn)
            }
            if flow.status == .succeeded {
                issued = try await sessions.create(
                    tenant: tenantID, username: verified.username, userHandle: Base64URL.encode(verified.userHandle), amr: ["fido2"], acr: acr,
                    credentialID: verified.credentialID, at: now, on: conn)
                try await recordSignIn(tenant: tenantID, username: verified.username, at: now, on: conn)
            }
        }
        let result = QuickSignInResult(
            signinId: flow.id, action: decision.actionName, matchedRule: decision.matchedRule, status: flow.status.rawValue, completedMethods: flow.completed,
            remainingSequences: flow.status == .inProgress ? flow.progress.remaining : [], sessionToken: issued?.accessToken,
            refreshToken: issued?.refreshToken, expiresAt: issued?.expiresAt)
        return try .json(result, headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Rejecting a transaction

    /// `POST …/signins/{id}/reject`: the user refuses the transaction this sign-in confirms.
    func reject(_ ctx: RequestContext) async throws -> HTTPResponse {
        var flow = try await activeFlow(ctx)
        guard let id = flow.transactionId else {
            throw HTTPError(ProblemCode("not_a_transaction", status: 409, title: "Nothing to reject"), detail: "This sign-in confirms no transaction.")
        }
        let now = Date()
        let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: context.pool, now: now)
        flow.status = .rejected
        flow.pendingMethod = nil
        flow.pendingState = nil
        try await context.withTransaction { conn in
            try await flow.save(on: conn)
            try await Outbox.enqueue(
                TransactionDecision(
                    tenantId: flow.tenant, transactionId: id, decision: "rejected", detailsHash: Base64URL.encode(tx.detailsHash), signinId: flow.id,
                    amr: flow.completed, assertions: [], decidedAt: now),
                source: .authentication, subject: flow.tenant, key: flow.tenant, on: conn)
        }
        ctx.logger.info("transaction rejected by the user")
        return try .json(progressBody(flow), headers: [("Cache-Control", "no-store")])
    }
}
