import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit
import Tokens

/// The sessions the authentication service revoked (`session.revoked.v1`: logout, a refresh
/// token used twice, the RP's revocation), kept here for a day, past any access token's
/// lifetime. A session token is verified by its signature and expiry alone, so until this
/// record a revoked session's access token still fetched and erased its user's data for up to
/// `SIGNET_SESSION_TTL_SECONDS`: the two routes that do either now refuse it (401), as soon as
/// the event has reached this service (milliseconds under a working broker).
enum RevokedSessions {
    static let kept: TimeInterval = 86_400

    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(SessionRevoked.self) { e, _, conn in
            try await conn.query(
                """
                INSERT INTO revoked_sessions (tenant_id, sid, revoked_at) VALUES (\(e.tenantId), \(e.sessionId), \(e.revokedAt))
                ON CONFLICT (tenant_id, sid) DO NOTHING
                """)
        }
        return h
    }

    /// For a request made with the user's session token (the guard verified it): 401 when the
    /// token names no session (`sid`) or its session was revoked. RP keys pass.
    static func requireActive(_ request: HTTPRequest, _ ctx: RequestContext, pool: PostgresPool) async throws {
        guard case .user(let tenant, _) = ctx.principal else { return }
        let refused = { (detail: String) in HTTPError(.unauthorized, detail: detail, headers: [("WWW-Authenticate", "Bearer")]) }
        guard let token = request.bearerToken, let jws = try? JWS(compact: token), case .object(let claims)? = try? JSONParser.parse(jws.payload),
            case .string(let sid)? = claims["sid"], (1...64).contains(sid.utf8.count)
        else { throw refused("The session token names no session.") }
        let revoked = try await pool.withConnection { conn in
            try await conn.query("SELECT 1 AS revoked FROM revoked_sessions WHERE tenant_id = \(tenant) AND sid = \(sid)").first != nil
        }
        if revoked { throw refused("The session was revoked; sign in again.") }
    }

    /// The rows past ``kept``, in bounded batches (the retention pass).
    static func purge(now: Date, limit: Int, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM revoked_sessions WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM revoked_sessions WHERE revoked_at < \(now.addingTimeInterval(-kept)) LIMIT \(limit)))
            """)
    }
}
