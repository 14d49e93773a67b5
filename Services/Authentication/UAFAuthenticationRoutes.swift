import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// FIDO UAF 1.2 sign-in over HTTP (UAF Protocol §3.5): the AuthenticationRequest, whose state
/// (challenge, user, the hashes of the transaction shown) travels sealed in `serverData`, then the client's
/// AuthenticationResponse verified by `FIDO.UAFAuthenticationVerifier` against the read model of
/// registration's UAF keys; the challenge's single use and the counter update commit in one
/// transaction; then a session token, as a passkey sign-in gives.
///
/// One assertion gives a session here, without the tenant's authentication rules: both calls
/// answer 403 `direct_sign_in_disabled` for a tenant that closed the route
/// (``AuthenticationSettings/directSignIn``; by default, once it has a ruleset of its own). The
/// `uaf` method of sign-in flows is not concerned. The user's `uaf` standing holds as in a
/// sign-in flow (423 `method_locked`, 429 `method_probation`), and each refused response counts
/// towards it (``AntiHammering/counted(tenant:username:method:settings:now:logger:_:)``).
struct UAFAuthenticationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    let sessions: SessionIssuer
    let ceremony: UAFAssertionCeremony
    /// The tenant's settings and rules, compiled and kept: whether the route is open.
    let policies: PolicyStore
    /// Whose a transaction is, when a confirmation starts without a username.
    let transactions: TransactionTokens
    /// The user's `uaf` standing: failures counted, probation and lock.
    let antiHammering: AntiHammering

    static let requestLifetime: TimeInterval = 300
    /// The refusals of an authenticator model by the tenant's UAF policy: no guess at the
    /// user's secret, so not counted towards the user's standing.
    static let handlePurpose = "signet.uaf.authentication.v1"

    struct ServerData: Codable {
        var tenant: String
        var username: String?
        var challenge: String
        var expiresAt: Date
        /// The hashes of each form of the transaction content shown (`transactionText` or a
        /// `transaction` list), when confirming one: TransactionContentHash must be one of them.
        var shown: [UAFShownTransaction]?
        /// A transaction-service transaction being confirmed, and the base64url nonce of its
        /// dynamic-linking challenge (``FIDO/UAFTransactionConfirmation``).
        var transactionId: String?
        var nonce: String?
    }

    func register(on router: inout GuardedRouter) {
        // An inline `transaction` list may carry a PNG in each of its forms.
        router.post("/v1/tenants/{tenant}/uaf/authentications/requests", .open, extraBodyBytes: UAFTransactionContents.maximumContentLength) {
            request, ctx in try await requests(request, ctx)
        }
        router.post("/v1/tenants/{tenant}/uaf/authentications", .open) { request, ctx in try await finish(request, ctx) }
    }

    /// `POST …/uaf/authentications/requests` `{"username"?, "transactionText"?}`,
    /// `{"username"?, "transaction": {"transactionId"}}` or `{"username"?, "transaction": [Transaction]}`.
    func requests(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        var body = request.body.isEmpty ? UAFAuthenticationRequestBody() : try request.decode(UAFAuthenticationRequestBody.self)
        if let u = body.username { try UsernameRules.require(u) }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // Before any ceremony starts: a closed route gives no request to answer.
        try await policies.requireDirectSignIn(tenant: tenantID)
        var contents: UAFTransactionContents?
        var challenge = SecureRandom.token(byteCount: 32)
        var nonce: [UInt8]?
        var transactionId: String?
        switch body.transaction {
        case .reference(let reference)?:
            // A transaction of the transaction service: the user is its user, the challenge
            // commits to its details hash, and the authenticator shows its display text or
            // one of its images.
            guard body.transactionText == nil else {
                throw HTTPError.invalid("transaction", "Send transaction or transactionText, not both.")
            }
            let tx = try await PendingTransaction.load(reference.transactionId, tenant: tenantID, pool: context.pool)
            // The read model knows the user by subject reference (see SignInCoordinator.start).
            let owner: String
            if let given = body.username { owner = given } else { owner = try await transactions.username(reference.transactionId, tenant: tenantID) }
            guard ConstantTime.equals(context.configuration.subjectKey.ref(tenant: tenantID, username: owner), tx.subjectRef) else {
                throw HTTPError(.forbidden, detail: "This transaction is for another user.")
            }
            body.username = owner
            let n = SecureRandom.bytes(16)
            challenge = UAFTransactionConfirmation.challenge(detailsHash: tx.detailsHash, nonce: n)
            // Its content is derived again from the transaction at verification (not sealed).
            contents = UAFTransactionContents(transactions: tx.details.uafTransactions, shown: [])
            nonce = n
            transactionId = reference.transactionId
        case .contents(let forms)?:
            // Text or PNG forms of a transaction the RP's app shows: checked here (a PNG
            // strictly, against its characteristics), their hashes bound to the request.
            guard body.transactionText == nil else {
                throw HTTPError.invalid("transaction", "Send transaction or transactionText, not both.")
            }
            contents = try UAFTransactionContents.list(forms)
        case nil:
            if let text = body.transactionText { contents = try UAFTransactionContents.text(text) }
        }
        var keys: [(aaid: String, keyID: String)]?
        if let username = body.username { keys = try await UAFReadModel.activeKeys(
                tenant: tenantID, subjectRef: context.configuration.subjectKey.ref(tenant: tenantID, username: username), pool: context.pool) }
        let expiresAt = Date().addingTimeInterval(Self.requestLifetime)
        let serverData = try handles.seal(
            ServerData(
                tenant: tenantID, username: body.username, challenge: challenge, expiresAt: expiresAt,
                shown: nonce == nil ? contents?.shown : nil, transactionId: transactionId, nonce: nonce.map(Base64URL.encode)),
            purpose: Self.handlePurpose)
        let messages = try await ceremony.requestMessages(
            tenant: tenant, keys: keys, challenge: challenge, serverData: serverData, transactions: contents?.transactions ?? [])
        return try .json(UAFRequestEnvelope(uafRequest: messages, expiresAt: expiresAt), headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/uaf/authentications` `{"uafResponse"}` → a session.
    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // Again at finish: a request given before the tenant closed the route gives no session.
        let settings = try await policies.requireDirectSignIn(tenant: tenantID).settings
        let body = try request.decode(UAFResponseBody.self)
        let response: UAFResponse
        do { response = try UAFMessageDecoding.response(body.uafResponse) } catch {
            throw HTTPError(.uafSignInRefused(error), detail: error.description, field: "uafResponse")
        }
        guard let sealed = response.header.serverData,
            let state = try? handles.open(sealed, as: ServerData.self, purpose: Self.handlePurpose)
        else { throw HTTPError(.invalidHandle, detail: "serverData is not one this service issued.") }
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "serverData belongs to another tenant.") }
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The sign-in request expired; start again.") }
        var shown = state.shown ?? []
        var challenge = state.challenge
        var confirming: (tx: PendingTransaction, nonce: [UInt8])?
        if let id = state.transactionId {
            // Still pending, and its details now are the ones the challenge and the text commit
            // to: an amended amount or payee no longer matches what was signed.
            guard let nonce = state.nonce.flatMap(Base64URL.decode), nonce.count == 16 else {
                throw HTTPError(.invalidHandle, detail: "serverData is not one this service issued.")
            }
            guard response.assertions.count == 1 else {
                throw HTTPError.invalid("uafResponse", "A transaction is confirmed by exactly one UAF assertion.")
            }
            let tx = try await PendingTransaction.load(id, tenant: tenantID, pool: context.pool)
            challenge = UAFTransactionConfirmation.challenge(detailsHash: tx.detailsHash, nonce: nonce)
            shown = tx.details.uafShown
            confirming = (tx, nonce)
        }
        // No sessions row: the id proves itself when the RP revokes it (DirectSessionID).
        let sessionID = DirectSessionID.make(tenant: tenantID, handles: handles)
        let confirmation = confirming
        // The user's uaf standing: the user the request named, or the keys' owner. Keys that
        // cannot sign in at all (suspended, another user's) are refused first, uncounted.
        let presented = try await ceremony.presentedKeys(response, tenant: tenantID, expectedUsername: state.username)
        let owner = try await ceremony.owner(of: presented, tenant: tenantID, expectedUsername: state.username)
        func verify(recorded: (@Sendable (UAFAssertionCeremony.Verified, PostgresConnection) async throws -> Void)?) async throws
            -> UAFAssertionCeremony.Verified
        {
            try await ceremony.verify(
                response, tenant: tenant, challenge: challenge, serverData: sealed, challengeExpiresAt: state.expiresAt,
                expectedUsername: state.username, shown: shown, presented: presented, sessionID: sessionID, logger: ctx.logger,
                decision: { verified, now in
                    // The decision commits with the challenge's single use.
                    confirmation.map { c in
                        TransactionDecision(
                            tenantId: tenantID, transactionId: c.tx.id, decision: "confirmed", detailsHash: Base64URL.encode(c.tx.detailsHash),
                            signinId: sessionID, amr: ["uaf"], assertions: [verified.evidence(nonce: c.nonce)], decidedAt: now)
                    }
                }, recorded: recorded)
        }
        let verified: UAFAssertionCeremony.Verified
        if let owner {
            // Reserved before the response is verified (a method locked or on probation refuses
            // it), a refusal stands as a failure, a success clears the count with the challenge.
            // An authenticator the tenant's UAF policy refuses is no guess: not counted.
            verified = try await antiHammering.counted(
                tenant: tenantID, username: owner, method: "uaf", settings: settings, now: Date(), logger: ctx.logger,
                counts: UAFAssertionCeremony.countsAsGuess
            ) {
                try await verify { _, conn in try await antiHammering.recordSuccess(tenant: tenantID, username: owner, method: "uaf", on: conn) }
            }
        } else {
            verified = try await verify(recorded: nil)
        }
        let now = Date()
        let session = try sessions.issue(
            tenant: tenantID, username: verified.username, credentialID: verified.keyID, userVerified: true, sessionID: sessionID, at: now)
        ctx.logger.info("signed in with uaf")
        return try .json(
            UAFAuthenticationResult(
                sessionToken: session.token, username: verified.username, aaid: verified.aaid, keyId: verified.keyID,
                transactionConfirmed: verified.confirmedTransaction, expiresAt: session.expiresAt,
                transaction: confirming.map { SignInTransaction(transactionId: $0.tx.id, status: "PENDING") }),
            headers: [("Cache-Control", "no-store")])
    }
}
