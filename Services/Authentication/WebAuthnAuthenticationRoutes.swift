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
    let keyCache = ParsedKeyCache()

    static let ceremonyLifetime: TimeInterval = 300
    static let handlePurpose = "signet.webauthn.authentication.v1"

    struct HandleState: Codable {
        var tenant: String
        var username: String?
        var challenge: String
        var expiresAt: Date
        var userVerification: String
    }

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
        let state = HandleState(
            tenant: tenantID, username: body.username, challenge: Base64URL.encode(challenge),
            expiresAt: Date().addingTimeInterval(Self.ceremonyLifetime), userVerification: uv)
        let options = RequestOptionsJSON(
            challenge: state.challenge, timeout: Int(Self.ceremonyLifetime * 1000), rpId: tenant.rpId, allowCredentials: allow,
            userVerification: uv, hints: hints)
        return try .json(
            AuthenticationOptionsResponse(handle: try handles.seal(state, purpose: Self.handlePurpose), publicKey: options),
            headers: [("Cache-Control", "no-store")])
    }

    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = try request.decode(AuthenticationFinishRequest.self)
        let state = try handles.open(body.handle, as: HandleState.self, purpose: Self.handlePurpose)
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
        guard let challenge = Base64URL.decode(state.challenge) else { throw HTTPError(.invalidHandle) }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }

        let challengeHash = SHA256.hash(challenge)
        let rows = try await context.pool.withConnection { conn in
            // One read: the credential, and whether this ceremony's challenge was already used
            // (a replayed assertion must be reported as a replay before its stale counter can
            // be taken for a clone).
            try await conn.query(
                """
                SELECT username, user_handle, public_key_cose, sign_count, backup_eligible, backup_state, status, clone_suspected,
                       EXISTS (SELECT 1 FROM used_challenges WHERE challenge_hash = \(PostgresBytes(challengeHash))) AS challenge_used
                FROM credentials WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(rawID))
                """)
        }
        let refused = { (code: String, detail: String) in
            HTTPError(ProblemCode(code, status: 400, title: "Sign-in refused"), detail: detail)
        }
        if rows.first?.bool("challenge_used") == true {
            throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.")
        }
        guard let row = rows.first, let username = row.string("username"), let storedHandle = row.bytes("user_handle"),
            let cose = row.bytes("public_key_cose"), let storedCount = row.int64("sign_count")
        else { throw refused("credential_not_found", "This credential is not registered for this tenant.") }
        // §7.2 step 6: the credential must belong to the identified user.
        if let expected = state.username, expected != username {
            throw refused("credential_not_allowed", "This credential does not belong to the user signing in.")
        }
        if row.string("status") == "deleted" {
            throw refused("credential_not_found", "This credential is not registered for this tenant.")
        }
        guard row.string("status") == "active", row.bool("clone_suspected") != true else {
            throw refused("credential_suspended", "This credential is suspended.")
        }
        guard let key = keyCache.key(for: rawID, cose: cose) else { throw HTTPError(.internalError, detail: "Stored key unusable.") }
        let record = CredentialRecord(
            id: rawID, parsedPublicKey: key, signCount: UInt32(clamping: storedCount), backupEligible: row.bool("backup_eligible") ?? false,
            backupState: row.bool("backup_state") ?? false, userHandle: storedHandle)
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
            if error.code.rawValue == "sign_count_not_increased" {
                // A possible clone: the credential stops working until an administrator looks.
                try await context.withTransaction { conn in
                    try await conn.query(
                        "UPDATE credentials SET clone_suspected = true WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(rawID))")
                }
                ctx.logger.warning("possible cloned authenticator; credential flagged")
            }
            ctx.logger.info("sign-in refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw refused(error.code.rawValue, error.description)
        }
        let now = Date()
        try await context.pool.withTransaction { conn in
            // The replay check and the counter update commit together.
            let used = try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(challengeHash)), \(state.expiresAt))
                ON CONFLICT DO NOTHING
                """)
            guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This sign-in was already completed.") }
            let updated = try await conn.query(
                """
                UPDATE credentials SET sign_count = \(Int64(verified.newSignCount)), backup_state = \(verified.flags.contains(.backupState)),
                    last_used_at = \(now)
                WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(rawID)) AND sign_count = \(storedCount)
                """)
            guard updated.affectedRows == 1 else {
                throw refused("sign_count_conflict", "The credential was used concurrently; sign in again.")
            }
        }
        let credentialID = Base64URL.encode(rawID)
        let session = try sessions.issue(
            tenant: tenantID, username: username, credentialID: credentialID, userVerified: verified.flags.contains(.userVerified), at: now)
        ctx.logger.info("signed in")
        return try .json(
            AuthenticationResult(sessionToken: session.token, username: username, credentialId: credentialID, expiresAt: session.expiresAt),
            headers: [("Cache-Control", "no-store")])
    }
}
