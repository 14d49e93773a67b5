import Crypto
import FIDO
import Foundation
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// FIDO UAF 1.2 sign-in over HTTP (UAF Protocol §3.5): the AuthenticationRequest, whose state
/// (challenge, user, transaction text) travels sealed in `serverData`, then the client's
/// AuthenticationResponse verified by `FIDO.UAFAuthenticationVerifier` against the read model of
/// registration's UAF keys; the challenge's single use and the counter update commit in one
/// transaction; then a session token, as a passkey sign-in gives.
struct UAFAuthenticationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    let sessions: SessionIssuer
    /// The registration service's public base URL (`SIGNET_UAF_APP_ID_BASE`), as there.
    let appIDBase: String

    static let requestLifetime: TimeInterval = 300
    static let handlePurpose = "signet.uaf.authentication.v1"
    static let offeredVersions: [UAFVersion] = [.v1_2, .v1_1]
    /// Longest transaction text shown to the user.
    static let maximumTransactionText = 200

    struct ServerData: Codable {
        var tenant: String
        var username: String?
        var challenge: String
        var expiresAt: Date
        /// base64url of the `text/plain` transaction content, when confirming one.
        var transaction: String?
    }

    static func appID(base: String, tenant: String) -> String { "\(base)/v1/tenants/\(tenant)/uaf/facets" }

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/uaf/authentications/requests", .open) { request, ctx in try await requests(request, ctx) }
        router.post("/v1/tenants/{tenant}/uaf/authentications", .open) { request, ctx in try await finish(request, ctx) }
    }

    /// `POST …/uaf/authentications/requests` `{"username"?, "transactionText"?}`.
    func requests(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = request.body.isEmpty ? UAFAuthenticationRequestBody() : try request.decode(UAFAuthenticationRequestBody.self)
        if let u = body.username { try UsernameRules.require(u) }
        var transaction: UAFTransaction?
        if let text = body.transactionText {
            guard !text.isEmpty, text.count <= Self.maximumTransactionText,
                !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" })
            else { throw HTTPError.invalid("transactionText", "transactionText must be 1-\(Self.maximumTransactionText) characters without control characters.") }
            transaction = UAFTransaction(contentType: "text/plain", content: Base64URL.encode(Array(text.utf8)))
        }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        var policy = try await UAFReadModel.settings(tenant, pool: context.pool).policy
        if let username = body.username {
            // Name the user's keys, so that the client offers only those (an unknown user gets
            // the tenant's policy alone, like a known one without keys).
            let keys = try await context.pool.withConnection { conn in
                try await conn.query(
                    """
                    SELECT aaid, key_id FROM uaf_registrations
                    WHERE tenant_id = \(tenantID) AND username = \(username) AND status = 'active' ORDER BY registered_at
                    """)
            }.compactMap { row -> UAFMatchCriteria? in
                guard let aaid = row.string("aaid"), let keyID = row.bytes("key_id") else { return nil }
                return UAFMatchCriteria(aaid: [aaid], keyIDs: [Base64URL.encode(keyID)])
            }
            if !keys.isEmpty { policy = UAFPolicy(accepted: keys.map { [$0] }, disallowed: policy.disallowed) }
        }
        let expiresAt = Date().addingTimeInterval(Self.requestLifetime)
        let challenge = SecureRandom.token(byteCount: 32)
        let serverData = try handles.seal(
            ServerData(tenant: tenantID, username: body.username, challenge: challenge, expiresAt: expiresAt, transaction: transaction?.content),
            purpose: Self.handlePurpose)
        let appID = Self.appID(base: appIDBase, tenant: tenantID)
        let messages = try Self.offeredVersions.map { version in
            try JSONValueEncoder().encode(
                UAFAuthenticationRequest(
                    header: UAFOperationHeader(upv: version, op: "Auth", appID: appID, serverData: serverData),
                    challenge: challenge, transaction: transaction.map { [$0] }, policy: policy))
        }
        return try .json(UAFRequestEnvelope(uafRequest: messages, expiresAt: expiresAt), headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/uaf/authentications` `{"uafResponse"}` → a session.
    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
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
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        let settings = try await UAFReadModel.settings(tenant, pool: context.pool)

        // The keys the assertions name, read before verifying (the verifier is pure). An
        // assertion that does not parse is refused by the verifier with its code.
        let keys = response.assertions.compactMap { message -> (aaid: String, keyID: [UInt8])? in
            guard let bytes = Base64URL.decode(message.assertion), let a = try? UAFAuthenticationAssertion(bytes: bytes) else { return nil }
            return (a.aaid, a.keyID)
        }
        let stored = try await UAFReadModel.load(tenant: tenantID, keys: keys, pool: context.pool)
        for s in stored {
            if let username = state.username, !UsernameRules.identical(username, s.username) {
                throw HTTPError(.credentialNotAllowed, detail: "This authenticator key does not belong to the user signing in.")
            }
            guard s.status == "active" else { throw HTTPError(.credentialSuspended, detail: "This authenticator key is suspended.") }
        }
        guard Set(stored.map(\.username)).count <= 1 else {
            throw HTTPError(.credentialNotAllowed, detail: "The assertions are from keys of different users.")
        }
        let transaction = state.transaction.map { UAFTransaction(contentType: "text/plain", content: $0) }
        let verifier = UAFAuthenticationVerifier(
            context: UAFResponseContext(
                appID: Self.appID(base: appIDBase, tenant: tenantID), trustedFacetIDs: settings.facetIDs, acceptedVersions: Self.offeredVersions),
            policy: settings.policy)
        let verified: [UAFVerifiedAuthentication]
        do {
            // The counter is judged in the transaction that consumes the challenge, against the
            // stored value under the row lock; the verifier is given 0 so that it accepts any
            // counter here (a replay is then refused as challenge_replayed, not by its counter).
            verified = try verifier.verify(response, expectedChallenge: state.challenge, serverData: sealed, transaction: transaction) { aaid, keyID in
                stored.first { $0.record.aaid == aaid && $0.record.keyID == keyID }.map { s in
                    UAFRegistrationRecord(
                        aaid: s.record.aaid, keyID: s.record.keyID, publicKey: s.record.publicKey, keyEncoding: s.record.keyEncoding,
                        signatureAlgorithm: s.record.signatureAlgorithm, signCounter: 0, attestationType: s.record.attestationType)
                }
            }
        } catch {
            ctx.logger.info("uaf sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.uafSignInRefused(error), detail: error.description)
        }
        guard let first = verified.first, let owner = stored.first?.username else { throw HTTPError(.credentialNotFound) }
        let now = Date()
        // The challenge's single use and the counters commit together; the counter condition
        // is checked again under the row lock, so two concurrent uses of one counter value
        // cannot both pass.
        try await context.withTransaction { conn in
            let used = try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at)
                VALUES (\(PostgresBytes(SHA256.hash(Array(state.challenge.utf8)))), \(state.expiresAt)) ON CONFLICT DO NOTHING
                """)
            guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.") }
            for v in verified {
                let counter = Int64(v.newSignCounter)
                let updated = try await conn.query(
                    """
                    UPDATE uaf_registrations SET sign_counter = \(counter)
                    WHERE tenant_id = \(tenantID) AND aaid = \(v.record.aaid) AND key_id = \(PostgresBytes(v.record.keyID)) AND status = 'active'
                        AND (sign_counter < \(counter) OR (sign_counter = 0 AND \(counter) = 0))
                    """)
                guard updated.affectedRows == 1 else {
                    // UAF Protocol §3.5.7.5: a counter that did not increase may be a cloned authenticator.
                    let error = UAFError(.signCounterNotIncreased, rule: "Protocol §3.5.7.5 step 4.f", "the signature counter did not increase")
                    throw HTTPError(.uafSignInRefused(error), detail: error.description)
                }
            }
        }
        let keyID = Base64URL.encode(first.record.keyID)
        let session = try sessions.issue(
            tenant: tenantID, username: owner, credentialID: keyID, userVerified: true, sessionID: SessionIssuer.newSessionID(), at: now)
        ctx.logger.info("signed in with uaf")
        return try .json(
            UAFAuthenticationResult(
                sessionToken: session.token, username: owner, aaid: first.record.aaid, keyId: keyID, transactionConfirmed: first.confirmedTransaction,
                expiresAt: session.expiresAt),
            headers: [("Cache-Control", "no-store")])
    }
}
