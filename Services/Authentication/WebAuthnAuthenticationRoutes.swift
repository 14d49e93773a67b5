import Crypto
import FIDO
import Foundation
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// WebAuthn sign-in: request options (a sealed handle, nothing written) and assertion
/// verification (WebAuthn L3 §7.2 in `FIDO.AssertionVerifier`), where the challenge's single
/// use and the counter update commit in one transaction, then a session token.
struct WebAuthnAuthenticationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    let sessions: SessionIssuer
    let credentials = CredentialCache()

    static let ceremonyLifetime: TimeInterval = 300

    func register(on router: inout Router) {
        router.post("/v1/tenants/{tenant}/webauthn/authentications/options") { request, ctx in try await options(request, ctx) }
        router.post("/v1/tenants/{tenant}/webauthn/authentications") { request, ctx in try await finish(request, ctx) }
        router.get("/.well-known/jwks.json") { _, _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(sessions.keys.jwksJSON.utf8))
        }
    }

    func options(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = request.body.isEmpty ? AuthenticationOptionsRequest() : try request.decode(AuthenticationOptionsRequest.self)
        if let u = body.username, !UsernameRules.isValid(u) { throw HTTPError.invalid("username", "username must be 1-256 characters without control characters.") }
        let uv = body.userVerification ?? "preferred"
        guard ["required", "preferred", "discouraged"].contains(uv) else {
            throw HTTPError.invalid("userVerification", "userVerification must be required, preferred or discouraged.")
        }
        let hints = body.hints ?? []
        guard hints.count <= 3, hints.allSatisfy({ ["security-key", "client-device", "hybrid"].contains($0) }) else {
            throw HTTPError.invalid("hints", "hints may contain security-key, client-device and hybrid.")
        }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        var allow: [CredentialDescriptorJSON] = []
        if let username = body.username {
            // An unknown username gets options with no credentials, like a known one without
            // credentials: the response does not reveal whether the account exists.
            let rows = try await context.pool.withConnection { conn in
                try await conn.query(
                    """
                    SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials
                    WHERE tenant_id = \(tenantID) AND username = \(username) AND status = 'active' ORDER BY registered_at
                    """)
            }
            allow = rows.compactMap { row in
                guard let id = row.bytes("credential_id") else { return nil }
                let transports = row.stringArray("transports")
                return CredentialDescriptorJSON(id: Base64URL.encode(id), transports: transports)
            }
        }
        let challenge = SecureRandom.bytes(32)
        let state = SignInHandle(
            tenant: tenantID, username: body.username, challenge: challenge,
            expiresAt: Date().addingTimeInterval(Self.ceremonyLifetime), userVerification: uv)
        let options = RequestOptionsJSON(
            challenge: Base64URL.encode(challenge), timeout: Int(Self.ceremonyLifetime * 1000), rpId: tenant.rpId, allowCredentials: allow,
            userVerification: uv, hints: hints)
        return try .json(
            AuthenticationOptionsResponse(handle: try state.sealed(with: handles), publicKey: options),
            headers: [("Cache-Control", "no-store")])
    }

    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = try request.decode(AuthenticationFinishRequest.self)
        let state = try SignInHandle.open(body.handle, with: handles)
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "The handle belongs to another tenant.") }
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The sign-in ceremony expired; start again.") }
        let r = body.credential.response
        guard body.credential.type == "public-key" else { throw HTTPError.invalid("credential.type", "type must be public-key.") }
        guard let rawID = Base64URL.decode(body.credential.rawId), !rawID.isEmpty, rawID.count <= 1023 else {
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
        let challenge = state.challenge
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }

        let challengeHash = SHA256.hash(challenge)
        let refused = { (code: String, detail: String) in
            HTTPError(ProblemCode(code, status: 400, title: "Sign-in refused"), detail: detail)
        }
        let credential = try await credential(tenant: tenantID, id: rawID, refused: refused)
        // §7.2 step 6: the credential must belong to the identified user.
        if let expected = state.username, expected != credential.username {
            throw refused("credential_not_allowed", "This credential does not belong to the user signing in.")
        }
        // The counter is judged by record_assertion against the stored value, in the
        // transaction that consumes the challenge; the verifier is given 0 so that it accepts
        // any counter here and still reports the new one.
        let record = CredentialRecord(
            id: rawID, parsedPublicKey: credential.key, signCount: 0, backupEligible: credential.backupEligible, backupState: false,
            userHandle: credential.userHandle)
        let verifier = AssertionVerifier(
            relyingParty: RelyingParty(id: tenant.rpId, origins: tenant.origins), requiresUserVerification: state.userVerification == "required")
        let response = AuthenticationResponse(
            id: body.credential.id, rawID: rawID, clientDataJSON: clientData, authenticatorData: authData, signature: signature,
            userHandle: userHandle)
        let verified: VerifiedAuthentication
        do {
            verified = try verifier.verify(
                response, expectedChallenge: challenge, credential: record,
                userIdentification: state.username == nil ? .byUserHandle : .beforeCeremony)
        } catch {
            ctx.logger.info("sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw refused(error.code.rawValue, error.description)
        }
        let now = Date()
        let credentialID = Base64URL.encode(rawID)
        let sessionID = SessionIssuer.newSessionID()
        let event = try EventEnvelope(
            AuthenticationSucceeded(
                tenantId: tenantID, method: "fido2", credentialId: credentialID, signCount: Int(verified.newSignCount),
                backupState: verified.flags.contains(.backupState), userVerified: verified.flags.contains(.userVerified), sessionId: sessionID,
                authenticatedAt: now),
            source: ServiceName.authentication.eventSource, subject: tenantID, time: now)
        // One round trip: the challenge's single use, the counter update and the event commit
        // together (AuthenticationMigrations 102).
        let outcome = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT outcome, stored_sign_count FROM record_assertion(
                    \(tenantID), \(PostgresBytes(rawID)), \(PostgresBytes(credential.publicKeyCOSE)), \(PostgresBytes(challengeHash)),
                    \(state.expiresAt), \(Int64(verified.newSignCount)), \(verified.flags.contains(.backupState)), \(now),
                    \(event.id), \(AuthenticationSucceeded.topic), \(tenantID), \(event.type), \(event.source), \(event.subject),
                    \(event.time), \(String(decoding: event.data, as: UTF8.self)))
                """)
        }.first
        switch outcome?.string("outcome") {
        case "ok":
            context.relay.notify()
        case "challenge_replayed":
            throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.")
        case "credential_suspended":
            credentials.remove(tenant: tenantID, id: rawID)
            throw refused("credential_suspended", "This credential is suspended.")
        case "sign_count_not_increased":
            // WebAuthn L3 §7.2 step 22: a possible clone. The credential stops working until an
            // administrator resumes it; the flag and its event commit together.
            let stored = outcome?.int64("stored_sign_count") ?? 0
            try await context.withTransaction { conn in
                try await conn.query(
                    "UPDATE credentials SET clone_suspected = true WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(rawID))")
                try await Outbox.enqueue(
                    CredentialCloneSuspected(
                        tenantId: tenantID, credentialId: credentialID, storedSignCount: Int(stored), presentedSignCount: Int(verified.newSignCount),
                        detectedAt: now),
                    source: .authentication, subject: tenantID, key: tenantID, on: conn)
            }
            credentials.remove(tenant: tenantID, id: rawID)
            ctx.logger.warning("possible cloned authenticator; credential flagged")
            throw refused("sign_count_not_increased", "The signature counter did not increase; the authenticator may have been cloned.")
        default:
            credentials.remove(tenant: tenantID, id: rawID)
            throw refused("credential_not_found", "This credential is not registered for this tenant.")
        }
        let session = try sessions.issue(
            tenant: tenantID, username: credential.username, credentialID: credentialID, userVerified: verified.flags.contains(.userVerified),
            sessionID: sessionID, at: now)
        ctx.logger.info("signed in")
        return try .json(
            AuthenticationResult(sessionToken: session.token, username: credential.username, credentialId: credentialID, expiresAt: session.expiresAt),
            headers: [("Cache-Control", "no-store")])
    }

    /// The credential's immutable part, from the cache or the read model. A credential read
    /// from the database is refused here when it is deleted, suspended or flagged; a cached one
    /// is checked by `record_assertion`.
    private func credential(
        tenant: String, id: [UInt8], refused: (String, String) -> HTTPError
    ) async throws -> CachedCredential {
        if let cached = credentials.credential(tenant: tenant, id: id) { return cached }
        let row = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT username, user_handle, public_key_cose, backup_eligible, status, clone_suspected
                FROM credentials WHERE tenant_id = \(tenant) AND credential_id = \(PostgresBytes(id))
                """)
        }.first
        guard let row, row.string("status") != "deleted", let username = row.string("username"), let handle = row.bytes("user_handle"),
            let cose = row.bytes("public_key_cose")
        else { throw refused("credential_not_found", "This credential is not registered for this tenant.") }
        guard row.string("status") == "active", row.bool("clone_suspected") != true else {
            throw refused("credential_suspended", "This credential is suspended.")
        }
        guard let key = try? COSEKey(bytes: cose) else { throw HTTPError(.internalError, detail: "Stored key unusable.") }
        let credential = CachedCredential(
            username: username, userHandle: handle, publicKeyCOSE: cose, key: key, backupEligible: row.bool("backup_eligible") ?? false)
        credentials.store(credential, tenant: tenant, id: id)
        return credential
    }
}
