import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import ServiceKit
import Tokens

/// Which sign-up an account belongs to, so that a sign-up token registers on its own account
/// only.
///
/// A sign-up token names a username (`sub`) and nothing else; the authentication service opens
/// one when the user has nothing *active* registered, and it stays valid 30 minutes. Without
/// this record any sign-up token for a username registered on that user's account whatever was
/// already there: a sign-up opened for `alice` a minute before Alice signed up added a passkey
/// to her account once she had registered hers, and one opened for a user whose passkeys were
/// all suspended, or who had UAF keys only, did so at once — an account takeover through a
/// public sign-up page.
///
/// Now the registration that first puts something on an account under a sign-up token records
/// the token's `jti` for the account (`sign_up_claims`, by subject reference, until the token
/// expires), in the same transaction as the insert and under a per-user advisory lock; a
/// sign-up token whose `jti` is not the account's is refused (409 `username_taken`) on every
/// route that takes one, as soon as the account holds anything: a credential, a UAF key or a
/// method of any status that is not deleted. A sign-up continuing on its own account (a second
/// method) passes. RP keys, sessions and the other kinds of registration-only token are not
/// concerned: they name a user who proved who they are.
struct SignUpClaim: Sendable, Equatable {
    let jti: String
    let expiresAt: Date

    /// The sign-up of the request being handled (``scoped(_:_:pool:subjectKey:_:)``), which the
    /// stores' registering transactions ``enforce(tenant:username:subjectKey:on:)``.
    @TaskLocal static var current: SignUpClaim?

    /// The claim of `request`'s sign-up token, when the guard admitted one (nil otherwise).
    static func of(_ request: HTTPRequest, _ ctx: RequestContext) throws -> SignUpClaim? {
        guard case .signingUp(_, _, .signUp) = ctx.principal else { return nil }
        // The guard verified the token; its `jti` and `exp` are read from its payload.
        guard let token = request.bearerToken, let jws = try? JWS(compact: token), case .object(let claims)? = try? JSONParser.parse(jws.payload),
            case .string(let jti)? = claims["jti"], (1...64).contains(jti.utf8.count), let exp = claims["exp"]?.intValue
        else { throw HTTPError(.unauthorized, detail: "The sign-up token names no sign-up.", headers: [("WWW-Authenticate", "Bearer")]) }
        return SignUpClaim(jti: jti, expiresAt: Date(timeIntervalSince1970: TimeInterval(exp)))
    }

    /// Runs `body` with the request's sign-up claim as ``current``, after refusing a sign-up
    /// token on an account another sign-up (or anything else) already registered on.
    static func scoped(
        _ request: HTTPRequest, _ ctx: RequestContext, pool: PostgresPool, subjectKey: SubjectKey, _ body: () async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        guard let claim = try of(request, ctx), case .signingUp(let tenant, let username, _) = ctx.principal else { return try await body() }
        try await pool.withConnection { conn in
            try await claim.check(tenant: tenant, username: username, subjectKey: subjectKey, claiming: false, on: conn)
        }
        return try await $current.withValue(claim) { try await body() }
    }

    /// In a transaction that registers something for `username`: when the request is a
    /// sign-up's, refuses it unless the account is empty or already its own, and records it as
    /// the account's. Nothing otherwise.
    static func enforce(tenant: String, username: String, subjectKey: SubjectKey, on conn: PostgresConnection) async throws {
        guard let claim = current else { return }
        try await claim.check(tenant: tenant, username: username, subjectKey: subjectKey, claiming: true, on: conn)
    }

    private func check(tenant: String, username: String, subjectKey: SubjectKey, claiming: Bool, on conn: PostgresConnection) async throws {
        let subjectRef = subjectKey.ref(tenant: tenant, username: username)
        if claiming {
            // One registering transaction per user at a time: the second sees the first's rows.
            try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended('sign-up/' || \(tenant) || '/' || \(subjectRef), 0))")
        }
        let row = try await conn.query(
            """
            SELECT (SELECT jti FROM sign_up_claims WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef)) AS jti,
                EXISTS (SELECT 1 FROM credentials WHERE tenant_id = \(tenant) AND username = \(username) AND deleted_at IS NULL)
                OR EXISTS (SELECT 1 FROM user_methods WHERE tenant_id = \(tenant) AND username = \(username) AND deleted_at IS NULL)
                OR EXISTS (SELECT 1 FROM uaf_registrations WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted')
                AS registered
            """
        ).first
        let owner = row?.string("jti")
        if row?.bool("registered") == true, !owns(owner) {
            throw HTTPError(.usernameTaken, detail: "This user already has methods; sign in instead.")
        }
        guard claiming, owner != jti else { return }
        try await conn.query(
            """
            INSERT INTO sign_up_claims (tenant_id, subject_ref, jti, expires_at) VALUES (\(tenant), \(subjectRef), \(jti), \(expiresAt))
            ON CONFLICT (tenant_id, subject_ref) DO UPDATE SET jti = EXCLUDED.jti, expires_at = EXCLUDED.expires_at
            """)
    }

    /// Whether `owner` (an account's recorded sign-up) is this sign-up.
    private func owns(_ owner: String?) -> Bool {
        owner.map { ConstantTime.equals(Array($0.utf8), Array(jti.utf8)) } ?? false
    }

    /// Whether the account of `username` is the sign-up `jti`'s (its first registration was made
    /// under it; a claim is recorded only by a registration, on an account that held nothing).
    static func registered(tenant: String, username: String, jti: String, subjectKey: SubjectKey, on conn: PostgresConnection) async throws -> Bool {
        let subjectRef = subjectKey.ref(tenant: tenant, username: username)
        let owner = try await conn.query("SELECT jti FROM sign_up_claims WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef)").first?.string("jti")
        return SignUpClaim(jti: jti, expiresAt: .distantPast).owns(owner)
    }

    /// Claims past their token's expiry (no token can present them any more), in batches.
    static func purge(now: Date, limit: Int, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM sign_up_claims WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM sign_up_claims WHERE expires_at < \(now) LIMIT \(limit)))
            """)
    }
}

extension ServiceContext {
    /// ``SignUpClaim/scoped(_:_:pool:subjectKey:_:)`` with this service's pool and subject key:
    /// every handler of a route that takes sign-up tokens runs in it.
    func signUpScoped(_ request: HTTPRequest, _ ctx: RequestContext, _ body: () async throws -> HTTPResponse) async throws -> HTTPResponse {
        try await SignUpClaim.scoped(request, ctx, pool: pool, subjectKey: configuration.subjectKey, body)
    }
}
