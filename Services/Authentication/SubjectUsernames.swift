import Crypto
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// The usernames of subject references, for sign-ins that find a credential or UAF key
/// without a username (a discoverable passkey, a UAF key, quick authentication): the read
/// models are keyed by subject reference (`credential.registered.v2`, `uaf.registered.v2` carry
/// no username, #18), and the session's `sub` is the username.
///
/// A reference is answered from `subject_usernames` (this service's own table) or else by the
/// registration service (`GET /v1/internal/tenants/{t}/subjects/{ref}/username`, internal
/// token), whose answer is checked (it must give the reference under the subject key) and kept,
/// so a sign-in asks at most once per user. The user's erasure deletes the row
/// (``AuthenticationUserData``), and the registration service answers 404 for an erased user.
struct SubjectUsernames: Sendable {
    let pool: PostgresPool
    let subjectKey: SubjectKey
    let calls: InternalCalls
    let registrationURL: String

    init(context: ServiceContext) {
        pool = context.pool
        subjectKey = context.configuration.subjectKey
        calls = context.configuration.internalCalls
        registrationURL = context.configuration.registrationURL
    }

    /// The username `subjectRef` stands for in `tenant`.
    ///
    /// - Throws: 400 `credential_not_found` when the registration service knows no such user
    ///   (erased); 503 `user_directory_unavailable` when it cannot be asked or answers
    ///   something that does not give the reference (never a guessed user).
    func username(tenant: String, subjectRef: String) async throws -> String {
        if let known = try await known(tenant: tenant, subjectRef: subjectRef) { return known }
        guard TenantValidation.isValidTenantID(tenant), SubjectRefFormat.isValid(subjectRef) else {
            throw HTTPError(.credentialNotFound, detail: "This credential is not registered for this tenant.")
        }
        let answer: SubjectUsername
        do {
            answer = try await calls.get(
                "\(registrationURL)/v1/internal/tenants/\(tenant)/subjects/\(subjectRef)/username", as: SubjectUsername.self, timeout: 2)
        } catch let error as HTTPError where error.code.status == 404 {
            throw HTTPError(.credentialNotFound, detail: "This credential is not registered for this tenant.")
        } catch {
            throw Self.unavailable
        }
        // The registration service's answer must be the user of this reference (the key is shared).
        guard UsernameRules.isValid(answer.username), ConstantTime.equals(answer.subjectRef, subjectRef),
            ConstantTime.equals(subjectKey.ref(tenant: tenant, username: answer.username), subjectRef)
        else { throw Self.unavailable }
        try await pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO subject_usernames (tenant_id, subject_ref, username) VALUES (\(tenant), \(subjectRef), \(answer.username))
                ON CONFLICT (tenant_id, subject_ref) DO NOTHING
                """)
        }
        return answer.username
    }

    /// The username kept for `subjectRef`, if any.
    func known(tenant: String, subjectRef: String) async throws -> String? {
        try await pool.withConnection { conn in
            try await conn.query(
                "SELECT username FROM subject_usernames WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef)"
            ).first?.string("username")
        }
    }

    static var unavailable: HTTPError {
        HTTPError(.userDirectoryUnavailable, detail: "Whose this credential is cannot be told right now; retry.", headers: [("Retry-After", "1")])
    }
}
