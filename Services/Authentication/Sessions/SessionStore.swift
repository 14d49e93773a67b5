import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit
import Tokens

/// Sessions of completed sign-in flows: a short-lived access token (a JWT, ES256, `amr` the
/// completed methods, `acr` the sequence) and a rotating refresh token.
///
/// Each refresh returns a new refresh token and retires the presented one. A retired token
/// presented again means it was copied: the whole session (the token family) is revoked, with
/// a `SessionRevoked` event, and both holders must sign in again — except within
/// ``reuseGrace`` of its rotation while the token it was exchanged for is still unused: that is
/// one client refreshing twice in parallel (two tabs, a retry after a lost answer), and the
/// late request gets a sibling token instead of logging the user out (OAuth 2.0 Security BCP,
/// RFC 9700 §4.14.2, lets an authorization server tolerate this). Refresh tokens are random
/// (256 bits) and stored as SHA-256 only.
struct SessionStore: Sendable {
    let context: ServiceContext
    let issuer: SessionIssuer
    /// Recognises the direct sign-in's session ids (``DirectSessionID``) at revocation.
    let handles: CeremonyHandles
    /// How long a session (its refresh tokens) lasts: 30 days.
    static let sessionLifetime: TimeInterval = 30 * 86_400
    /// How long after its rotation a retired refresh token may come back as a parallel
    /// refresh (while its successor is unused) instead of counting as a copy.
    static let reuseGrace: TimeInterval = 10

    struct Issued: Sendable {
        let sid: String
        let accessToken: String
        /// nil for a session created without one (`refreshable` false).
        let refreshToken: String?
        let expiresAt: Date

        /// The answer of a route whose sessions are always refreshable (sign-up finish, the
        /// session after an enforced registration).
        ///
        /// - Throws: 500 for a session created without a refresh token (a bug of the caller).
        func refreshableTokens() throws -> SessionTokens {
            guard let refreshToken else { throw HTTPError(.internalError) }
            return SessionTokens(sessionToken: accessToken, refreshToken: refreshToken, expiresAt: expiresAt)
        }
    }

    /// Creates a session in the caller's transaction, with its `SessionIssued` event.
    ///
    /// - Parameter refreshable: false for a session without a refresh token (none is made or
    ///   stored): a sign-in whose verify asked `refreshToken=false`, such as a web page's that
    ///   would only hold it in its memory.
    func create(
        tenant: String, username: String, userHandle: String?, amr: [String], acr: String, credentialID: String?, refreshable: Bool = true, at now: Date,
        on conn: PostgresConnection
    ) async throws -> Issued {
        let sid = SessionIssuer.newSessionID()
        let refresh = refreshable ? "rt_" + SecureRandom.token(byteCount: 32) : nil
        let expires = now.addingTimeInterval(Self.sessionLifetime)
        try await conn.query(
            """
            INSERT INTO sessions (sid, tenant_id, username, amr, acr, created_at, expires_at)
            VALUES (\(sid), \(tenant), \(username), \(PostgresArray(amr)), \(acr), \(now), \(expires))
            """)
        if let refresh {
            try await conn.query(
                "INSERT INTO refresh_tokens (token_hash, sid, issued_at) VALUES (\(PostgresBytes(SHA256.hash(Array(refresh.utf8)))), \(sid), \(now))")
        }
        try await Outbox.enqueue(
            SessionIssued(tenantId: tenant, sessionId: sid, userHandle: userHandle, amr: amr, acr: acr, issuedAt: now, expiresAt: expires),
            source: .authentication, subject: tenant, key: tenant, on: conn)
        let access = try issuer.issue(tenant: tenant, username: username, amr: amr, acr: acr, credentialID: credentialID, sessionID: sid, at: now)
        return Issued(sid: sid, accessToken: access.token, refreshToken: refresh, expiresAt: access.expiresAt)
    }

    /// Exchanges a refresh token for a new access token and refresh token.
    ///
    /// - Throws: 401 `invalid_refresh_token` (unknown, expired, revoked session) or
    ///   `refresh_token_reused` (the session is now revoked).
    func refresh(_ token: String, tenant: String) async throws -> SessionTokens {
        let invalid = HTTPError(.invalidRefreshToken, detail: "Sign in again.")
        guard token.hasPrefix("rt_"), token.utf8.count <= 128 else { throw invalid }
        let hash = SHA256.hash(Array(token.utf8))
        let now = Date()
        enum Outcome { case issued(SessionTokens), reused, invalid }
        let outcome = try await context.withTransaction { conn -> Outcome in
            let row = try await conn.query(
                """
                SELECT r.used_at, r.replaced_by, r.sibling_issued, s.sid, s.username, array_to_json(s.amr)::text AS amr, s.acr, s.expires_at, s.revoked_at
                FROM refresh_tokens r JOIN sessions s ON s.sid = r.sid
                WHERE r.token_hash = \(PostgresBytes(hash)) AND s.tenant_id = \(tenant)
                FOR UPDATE OF r, s
                """
            ).first
            guard let row, let sid = row.string("sid"), let username = row.string("username"), let acr = row.string("acr") else { return .invalid }
            guard row.string("revoked_at") == nil, let expires = row.date("expires_at"), expires > now else { return .invalid }
            let next = "rt_" + SecureRandom.token(byteCount: 32)
            let nextHash = SHA256.hash(Array(next.utf8))
            if let usedAt = row.date("used_at") {
                // A parallel refresh of the same client: the token it was exchanged for moments
                // ago is still unused. The late request gets a sibling in the same session, once:
                // a copy replayed again within the grace (one more, or many) is reuse.
                if now.timeIntervalSince(usedAt) <= Self.reuseGrace, row.bool("sibling_issued") == false, let successor = row.bytes("replaced_by"),
                    try await conn.query("SELECT 1 AS unused FROM refresh_tokens WHERE token_hash = \(PostgresBytes(successor)) AND used_at IS NULL").first != nil
                {
                    try await conn.query("UPDATE refresh_tokens SET sibling_issued = true WHERE token_hash = \(PostgresBytes(hash))")
                    try await conn.query(
                        "INSERT INTO refresh_tokens (token_hash, sid, issued_at) VALUES (\(PostgresBytes(nextHash)), \(sid), \(now))")
                    let access = try issuer.issue(
                        tenant: tenant, username: username, amr: row.stringArray("amr") ?? [], acr: acr, credentialID: nil, sessionID: sid, at: now)
                    return .issued(SessionTokens(sessionToken: access.token, refreshToken: next, expiresAt: access.expiresAt))
                }
                // A retired token came back: someone else holds a copy. End the session.
                try await conn.query("UPDATE sessions SET revoked_at = \(now), revoked_reason = 'refresh_token_reuse' WHERE sid = \(sid)")
                try await Outbox.enqueue(
                    SessionRevoked(tenantId: tenant, sessionId: sid, reason: "refresh_token_reuse", revokedAt: now), source: .authentication,
                    subject: tenant, key: tenant, on: conn)
                return .reused
            }
            try await conn.query(
                "UPDATE refresh_tokens SET used_at = \(now), replaced_by = \(PostgresBytes(nextHash)) WHERE token_hash = \(PostgresBytes(hash))")
            try await conn.query(
                "INSERT INTO refresh_tokens (token_hash, sid, issued_at) VALUES (\(PostgresBytes(nextHash)), \(sid), \(now))")
            let access = try issuer.issue(
                tenant: tenant, username: username, amr: row.stringArray("amr") ?? [], acr: acr, credentialID: nil, sessionID: sid, at: now)
            return .issued(SessionTokens(sessionToken: access.token, refreshToken: next, expiresAt: access.expiresAt))
        }
        switch outcome {
        case .issued(let tokens):
            return tokens
        case .reused:
            context.relay.notify()
            throw HTTPError(
                .refreshTokenReused,
                detail: "This refresh token was already used; the session is revoked. Sign in again.")
        case .invalid:
            throw invalid
        }
    }

    /// Revokes the session of a refresh token (logout) or by id (relying party). Returns
    /// false when there was no such active session.
    ///
    /// By id, a session of the direct sign-in routes (no `sessions` row, ``DirectSessionID``)
    /// is revoked too: recorded in `revoked_direct_sessions` (so that a second revocation
    /// answers as for any session already revoked) with the same `SessionRevoked` event, which
    /// is what makes every service that takes session tokens refuse its token.
    func revoke(tenant: String, refreshToken: String? = nil, sid: String? = nil, reason: String) async throws -> Bool {
        let now = Date()
        return try await context.withTransaction { conn -> Bool in
            var target = sid
            if let refreshToken {
                target = try await conn.query(
                    "SELECT sid FROM refresh_tokens WHERE token_hash = \(PostgresBytes(SHA256.hash(Array(refreshToken.utf8))))"
                ).first?.string("sid")
            }
            guard let target else { return false }
            let updated = try await conn.query(
                """
                UPDATE sessions SET revoked_at = \(now), revoked_reason = \(reason)
                WHERE sid = \(target) AND tenant_id = \(tenant) AND revoked_at IS NULL
                """)
            if updated.affectedRows != 1 {
                guard refreshToken == nil, DirectSessionID.isIssued(target, tenant: tenant, handles: handles) else { return false }
                let recorded = try await conn.query(
                    """
                    INSERT INTO revoked_direct_sessions (tenant_id, sid, revoked_at) VALUES (\(tenant), \(target), \(now))
                    ON CONFLICT (tenant_id, sid) DO NOTHING
                    """)
                guard recorded.affectedRows == 1 else { return false }
            }
            try await Outbox.enqueue(
                SessionRevoked(tenantId: tenant, sessionId: target, reason: reason, revokedAt: now), source: .authentication, subject: tenant,
                key: tenant, on: conn)
            return true
        }
    }
}
