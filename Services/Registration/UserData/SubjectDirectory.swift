import Postgres
import Schema
import ServiceKit

/// Which username each subject reference this service announced stands for (`subjects`):
/// ``CredentialRegistered`` and ``UAFAuthenticatorRegistered`` name the user by reference only
/// (#18), and the authentication service asks for the username of a credential or UAF key
/// found without one (`GET /v1/internal/tenants/{t}/subjects/{ref}/username`). A row is written
/// in the transaction that enqueues the announcing event and deleted by the user's erasure, so
/// an erased user's reference resolves to nothing.
enum SubjectDirectory {
    /// Records that `subjectRef` stands for `username` in `tenant`, in the caller's transaction.
    static func record(tenant: String, username: String, subjectRef: String, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO subjects (tenant_id, subject_ref, username) VALUES (\(tenant), \(subjectRef), \(username))
            ON CONFLICT (tenant_id, subject_ref) DO NOTHING
            """)
    }

    /// The username `subjectRef` stands for in `tenant`; nil for a malformed, unknown or erased one.
    static func username(tenant: String, subjectRef: String, on conn: PostgresConnection) async throws -> String? {
        guard SubjectRefFormat.isValid(subjectRef) else { return nil }
        return try await conn.query(
            "SELECT username FROM subjects WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef)"
        ).first?.string("username")
    }

    /// Forgets the user (their erasure), in the caller's transaction; the number of rows deleted.
    static func erase(tenant: String, username: String, on conn: PostgresConnection) async throws -> Int {
        try await conn.query("DELETE FROM subjects WHERE tenant_id = \(tenant) AND username = \(username)").affectedRows
    }
}
