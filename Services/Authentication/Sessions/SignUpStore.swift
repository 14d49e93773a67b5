import Crypto
import FoundationEssentials
import Postgres

/// What a sign-up needs of the database: whether the user has anything registered (in this
/// service's read models), and the single use of each sign-up token.
struct SignUpStore: Sendable {
    let pool: PostgresPool
    /// The methods' read model is keyed by subject reference.
    let subjectKey: SubjectKey

    /// Active credentials and methods of the user, in this service's read models.
    func registeredCount(tenant: String, username: String) async throws -> Int {
        let subjectRef = subjectKey.ref(tenant: tenant, username: username)
        return try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT (SELECT count(*) FROM credentials WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND status = 'active')
                     + (SELECT count(*) FROM user_methods WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef)
                         AND status = 'ACTIVE') AS n
                """)
        }.first?.int("n") ?? 0
    }

    /// Records that the sign-up token `jti` was used, in the caller's transaction (kept until
    /// it would have expired). Returns false when it already was.
    static func useToken(jti: String, expiresAt: Date, on conn: PostgresConnection) async throws -> Bool {
        try await conn.query(
            """
            INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(SHA256.hash(Array("signup/\(jti)".utf8)))), \(expiresAt))
            ON CONFLICT DO NOTHING
            """
        ).affectedRows == 1
    }
}
