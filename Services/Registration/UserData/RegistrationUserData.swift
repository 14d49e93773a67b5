import JSON
import Postgres
import ServiceKit

/// What the registration service holds about a user: the user (profile and handle), passkeys
/// (every status, deleted ones included), UAF authenticators, other methods (every status) and
/// the references of the profile a sign-up carried. A new table keyed by
/// user is added to both functions here (see ``UserDataStore``).
struct RegistrationUserData: UserDataStore {
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        let (t, u) = (user.tenant, user.username)
        return [
            "profile": try await UserErasure.rows(
                "SELECT username, display_name AS \"displayName\", created_at AS \"createdAt\" FROM users WHERE tenant_id = \(t) AND username = \(u)",
                on: conn),
            "credentials": try await UserErasure.rows(
                """
                SELECT translate(rtrim(encode(credential_id, 'base64'), '='), '+/', '-_') AS "credentialId", aaguid::text AS aaguid,
                    friendly_name AS "friendlyName", status, status_reason AS "statusReason", transports,
                    attestation_format AS "attestationFormat", attestation_type AS "attestationType", backup_eligible AS "backupEligible",
                    backup_state AS "backupState", user_verified AS "userVerified", sign_count AS "signCount", created_at AS "createdAt",
                    last_used_at AS "lastUsedAt"
                FROM credentials WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            "methods": try await UserErasure.rows(
                """
                SELECT id AS "methodId", type, status, masked, pii_ref AS "piiRef", friendly_name AS "friendlyName", created_at AS "createdAt",
                    confirmed_at AS "confirmedAt"
                FROM user_methods WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            // The sign-up profile: the vault's references and masked forms (the values are in
            // the pii service's part of the export).
            "signUpProfile": try await UserErasure.rows(
                """
                SELECT kind, masked, pii_ref AS "piiRef", updated_at AS "updatedAt"
                FROM user_profiles WHERE tenant_id = \(t) AND username = \(u) ORDER BY kind
                """, on: conn),
            "uafAuthenticators": try await UserErasure.rows(
                """
                SELECT aaid, translate(rtrim(encode(key_id, 'base64'), '='), '+/', '-_') AS "keyId", attestation_type AS "attestationType",
                    friendly_name AS "friendlyName", status, sign_counter AS "signCounter", created_at AS "createdAt"
                FROM uaf_registrations WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            // When codes were sent to set up methods (the last ten minutes': the send budget).
            "methodSetupSends": try await UserErasure.rows(
                """
                SELECT sent_at AS "sentAt" FROM method_setup_sends WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY sent_at
                """, on: conn),
        ]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        let (t, u) = (user.tenant, user.username)
        // Credentials before the user they reference.
        let credentials = try await conn.query("DELETE FROM credentials WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let methods = try await conn.query("DELETE FROM user_methods WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let uaf = try await conn.query("DELETE FROM uaf_registrations WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let profiles = try await conn.query("DELETE FROM user_profiles WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let users = try await conn.query("DELETE FROM users WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let setupSends = try await conn.query("DELETE FROM method_setup_sends WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows
        // A sign-up's claim on the account (a token id, transient: gone when the token expires).
        try await conn.query("DELETE FROM sign_up_claims WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)")
        // The reference no longer resolves: the authentication service's lookups answer 404.
        let subjects = try await SubjectDirectory.erase(tenant: t, username: u, on: conn)
        return ["credentials": credentials, "methods": methods, "uafAuthenticators": uaf, "signUpProfile": profiles, "users": users, "subjects": subjects, "methodSetupSends": setupSends]
    }
}
