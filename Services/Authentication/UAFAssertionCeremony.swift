import Crypto
import FIDO
import Foundation
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
    }

    /// AuthenticationRequest messages, one per version offered. With `keys` (the user's active
    /// keys), the policy names exactly those; otherwise it is the tenant's. The tenant's
    /// disallowed criteria apply either way.
    func requestMessages(
        tenant: TenantResource, keys: [(aaid: String, keyID: String)]?, challenge: String, serverData: String, transaction: UAFTransaction?
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
                    challenge: challenge, transaction: transaction.map { [$0] }, policy: policy))
        }
    }

    /// Verifies `response` for the request that issued `challenge` and `serverData`, and records it.
    ///
    /// - Parameters:
    ///   - expectedUsername: the user the request was for; nil accepts any user's key.
    ///   - excluding: base64url KeyIDs that may not be used (already used in the same flow).
    /// - Throws: 400 problem+json whose code names the failed check.
    func verify(
        _ response: UAFResponse, tenant: TenantResource, challenge: String, serverData: String, challengeExpiresAt: Date, expectedUsername: String?,
        transaction: UAFTransaction?, excluding: Set<String> = [], logger: Logger
    ) async throws -> Verified {
        let tenantID = tenant.id
        let settings = try await UAFReadModel.settings(tenant, pool: context.pool)
        // The keys the assertions name, read before verifying (the verifier is pure). An
        // assertion that does not parse is refused by the verifier with its code.
        let keys = response.assertions.compactMap { message -> (aaid: String, keyID: [UInt8])? in
            guard let bytes = Base64URL.decode(message.assertion), let a = try? UAFAuthenticationAssertion(bytes: bytes) else { return nil }
            return (a.aaid, a.keyID)
        }
        if keys.contains(where: { excluding.contains(Base64URL.encode($0.keyID)) }) {
            throw HTTPError(.credentialAlreadyUsed, detail: "This authenticator key already completed a step of this sign-in; use another.")
        }
        let stored = try await UAFReadModel.load(tenant: tenantID, keys: keys, pool: context.pool)
        for s in stored {
            if let expectedUsername, !UsernameRules.identical(expectedUsername, s.username) {
                throw HTTPError(.credentialNotAllowed, detail: "This authenticator key does not belong to the user signing in.")
            }
            guard s.status == "active" else { throw HTTPError(.credentialSuspended, detail: "This authenticator key is suspended.") }
        }
        guard Set(stored.map(\.username)).count <= 1 else {
            throw HTTPError(.credentialNotAllowed, detail: "The assertions are from keys of different users.")
        }
        let verifier = UAFAuthenticationVerifier(
            context: UAFResponseContext(appID: appID(tenant: tenantID), trustedFacetIDs: settings.facetIDs, acceptedVersions: Self.offeredVersions),
            policy: settings.policy)
        let verified: [UAFVerifiedAuthentication]
        do {
            // The counter is judged in the transaction that consumes the challenge, against the
            // stored value under the row lock; the verifier is given 0 so that it accepts any
            // counter here (a replay is then refused as challenge_replayed, not by its counter).
            verified = try verifier.verify(response, expectedChallenge: challenge, serverData: serverData, transaction: transaction) { aaid, keyID in
                stored.first { $0.record.aaid == aaid && $0.record.keyID == keyID }.map { s in
                    UAFRegistrationRecord(
                        aaid: s.record.aaid, keyID: s.record.keyID, publicKey: s.record.publicKey, keyEncoding: s.record.keyEncoding,
                        signatureAlgorithm: s.record.signatureAlgorithm, signCounter: 0, attestationType: s.record.attestationType)
                }
            }
        } catch {
            logger.info("uaf sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.uafSignInRefused(error), detail: error.description)
        }
        guard let first = verified.first, let owner = stored.first?.username else { throw HTTPError(.credentialNotFound) }
        // The challenge's single use and the counters commit together; the counter condition
        // is checked again under the row lock, so two concurrent uses of one counter value
        // cannot both pass.
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
                        AND (sign_counter < \(counter) OR (sign_counter = 0 AND \(counter) = 0))
                    """)
                guard updated.affectedRows == 1 else {
                    // UAF Protocol §3.5.7.5: a counter that did not increase may be a cloned authenticator.
                    let error = UAFError(.signCounterNotIncreased, rule: "Protocol §3.5.7.5 step 4.f", "the signature counter did not increase")
                    throw HTTPError(.uafSignInRefused(error), detail: error.description)
                }
            }
        }
        return Verified(username: owner, aaid: first.record.aaid, keyID: Base64URL.encode(first.record.keyID), confirmedTransaction: first.confirmedTransaction)
    }
}

/// FIDO UAF as a sign-in step: AuthenticationRequest messages naming the user's keys not yet
/// used in this flow, then the client's response through ``UAFAssertionCeremony``.
///
/// - Important: a flow that confirms a transaction (`context.transactionId`) does not offer
///   `uaf` yet: the transaction service verifies only fido2 evidence before issuing a tcToken.
struct UAFMethod: AuthenticationMethod {
    let ceremony: UAFAssertionCeremony
    let name = "uaf"

    /// What the flow keeps between challenge and verification.
    struct Pending: Codable {
        var challenge: String
        var serverData: String
    }

    func capacity(for user: UserFacts) -> Int {
        user.username == nil ? 1 : user.uafKeys.count
    }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        if flow.transactionId != nil {
            throw HTTPError(.methodUnavailable, detail: "UAF does not confirm the transactions of sign-in flows yet; use fido2.")
        }
        let keys = user.uafKeys.filter { !flow.usedCredentials.contains($0.keyID) }
        if flow.username != nil, keys.isEmpty {
            throw HTTPError(.methodUnavailable, detail: "No UAF authenticator key of this user is left for this step.")
        }
        let pending = Pending(challenge: SecureRandom.token(byteCount: 32), serverData: SecureRandom.token(byteCount: 16))
        let messages = try await ceremony.requestMessages(
            tenant: tenant, keys: flow.username == nil ? nil : keys.map { ($0.aaid, $0.keyID) }, challenge: pending.challenge,
            serverData: pending.serverData, transaction: nil)
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
        let verified = try await ceremony.verify(
            response, tenant: tenant, challenge: state.challenge, serverData: state.serverData, challengeExpiresAt: flow.expiresAt,
            expectedUsername: flow.username, transaction: nil, excluding: Set(flow.usedCredentials), logger: .init(label: "signet.authentication.uaf"))
        return MethodOutcome(username: verified.username, userHandle: nil, credentialID: verified.keyID)
    }
}
