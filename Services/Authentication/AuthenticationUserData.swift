import JSON
import Postgres
import ServiceKit

/// What the authentication service holds about a user: its read models of the user's
/// credentials, methods and transactions, sessions (with their refresh tokens), sign-ins,
/// anti-hammering state, the last sign-in and registration answers, and the code-send budget of
/// the user's methods. A new table keyed by user is added to both functions here (see
/// ``UserDataStore``).
struct AuthenticationUserData: UserDataStore {
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        let (t, u) = (user.tenant, user.username)
        return [
            "credentials": try await UserErasure.rows(
                """
                SELECT translate(rtrim(encode(credential_id, 'base64'), '='), '+/', '-_') AS "credentialId", status,
                    clone_suspected AS "cloneSuspected", sign_count AS "signCount", registered_at AS "registeredAt", last_used_at AS "lastUsedAt"
                FROM credentials WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY registered_at
                """, on: conn),
            "methods": try await UserErasure.rows(
                "SELECT method_id AS \"methodId\", type, status, masked FROM user_methods WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY method_id",
                on: conn),
            "sessions": try await UserErasure.rows(
                """
                SELECT sid, amr, acr, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt",
                    revoked_reason AS "revokedReason"
                FROM sessions WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            "signIns": try await UserErasure.rows(
                """
                SELECT id AS "signinId", status, matched_rule AS "matchedRule", completed AS "completedMethods",
                    transaction_id AS "transactionId", created_at AS "createdAt", expires_at AS "expiresAt"
                FROM signin_flows WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            "lockouts": try await UserErasure.rows(
                """
                SELECT method, consecutive AS "consecutiveFailures", probation_until AS "probationUntil", locked_at AS "lockedAt",
                    last_failure_at AS "lastFailureAt"
                FROM method_failures WHERE tenant_id = \(t) AND username = \(u) ORDER BY method
                """, on: conn),
            "userState": try await UserErasure.rows(
                """
                SELECT last_signin_at AS "lastSignInAt", registration_answer AS "registrationAnswer",
                    registration_answered_at AS "registrationAnsweredAt"
                FROM user_state WHERE tenant_id = \(t) AND username = \(u)
                """, on: conn),
            "transactions": try await UserErasure.rows(
                "SELECT id AS \"transactionId\", status, expires_at AS \"expiresAt\" FROM transactions WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY id",
                on: conn),
            "uafAuthenticators": try await UserErasure.rows(
                """
                SELECT aaid, translate(rtrim(encode(key_id, 'base64'), '='), '+/', '-_') AS "keyId", status, sign_counter AS "signCounter",
                    registered_at AS "registeredAt"
                FROM uaf_registrations WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY registered_at
                """, on: conn),
            "devices": try await UserErasure.rows(
                """
                SELECT device_id AS "deviceId", platform, security_enabled AS "securityEnabled", changed_at AS "changedAt"
                FROM user_devices WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY device_id
                """, on: conn),
        ]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        let (t, u) = (user.tenant, user.username)
        // Rows reached through the user's sessions and methods first.
        let refreshTokens = try await conn.query(
            "DELETE FROM refresh_tokens WHERE sid IN (SELECT sid FROM sessions WHERE tenant_id = \(t) AND username = \(u))").affectedRows
        let codeSends = try await conn.query(
            """
            DELETE FROM code_sends WHERE tenant_id = \(t)
                AND method_id IN (SELECT method_id FROM user_methods WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef))
            """
        ).affectedRows
        var tallies = ["refreshTokens": refreshTokens, "codeSends": codeSends]
        tallies["sessions"] = try await conn.query("DELETE FROM sessions WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        tallies["signIns"] = try await conn.query("DELETE FROM signin_flows WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        tallies["lockouts"] = try await conn.query("DELETE FROM method_failures WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        tallies["userState"] = try await conn.query("DELETE FROM user_state WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        tallies["methods"] = try await conn.query("DELETE FROM user_methods WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        tallies["credentials"] = try await conn.query("DELETE FROM credentials WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        tallies["devices"] = try await conn.query("DELETE FROM user_devices WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        tallies["uafAuthenticators"] = try await conn.query(
            "DELETE FROM uaf_registrations WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        // The username the registration service told for the reference (SubjectUsernames).
        tallies["subjectUsernames"] = try await conn.query(
            "DELETE FROM subject_usernames WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        tallies["transactions"] = try await conn.query("DELETE FROM transactions WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        return tallies
    }
}
