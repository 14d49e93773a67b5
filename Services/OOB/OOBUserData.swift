import JSON
import Postgres
import ServiceKit

/// What the oob-notification service holds about a user: the devices bound to them and the
/// approval requests addressed to them; the QR sessions named for them or claimed by
/// their devices; the TruCodes their phones paired; the identity documents registered for them
/// (kind, issuer, expiry and the vault reference: the personal data is in the pii part, which the
/// purge shreds). Deliveries are not stored (their requests name a vault
/// reference, never the user) and templates are per tenant. A new table keyed by user is added
/// to both functions here (see ``UserDataStore``).
struct OOBUserData: UserDataStore {
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        let (t, u) = (user.tenant, user.username)
        return [
            // Keys are public; the sealed push token is a device secret and is not exported.
            "devices": try await UserErasure.rows(
                """
                SELECT id AS "deviceId", platform, model, os_version AS "osVersion", app_id AS "appId", status,
                    user_auth_key IS NOT NULL AS "securityEnabled", sealed_push_token IS NOT NULL AS "hasPushToken",
                    created_at AS "createdAt", last_seen_at AS "lastSeenAt"
                FROM devices WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            "approvals": try await UserErasure.rows(
                """
                SELECT id AS "approvalId", device_id AS "deviceId", level, action, resource, text, status, reason,
                    decided_level AS "decidedLevel", created_at AS "createdAt", expires_at AS "expiresAt", updated_at AS "updatedAt"
                FROM approvals WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            // Sessions named for the user, or claimed by their device (the watch token's hash is
            // a page's secret and is not exported).
            "qrSessions": try await UserErasure.rows(
                """
                SELECT id AS "qrSessionId", purpose, qr_type AS "qrType", status, reason, device_id AS "deviceId", created_at AS "createdAt",
                    expires_at AS "expiresAt", updated_at AS "updatedAt"
                FROM qr_sessions WHERE tenant_id = \(t) AND (username = \(u) OR claimed_username = \(u)) ORDER BY created_at
                """, on: conn),
            // The text hash is kept to recognise the same text again; it is not personal data
            // the user gave and is not exported.
            "identityDocuments": try await UserErasure.rows(
                """
                SELECT id AS "documentId", device_id AS "deviceId", document_type AS "documentType", issuing_country AS "issuingCountry",
                    jurisdiction, expires_on AS "expiresOn", identity_level AS "identityLevel", name_check AS "nameCheck", pii_ref AS "piiRef",
                    created_at AS "createdAt"
                FROM identity_documents WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            // TruCodes the user's phone paired.
            "truCodes": try await UserErasure.rows(
                """
                SELECT id AS "truCodeId", status, device_id AS "deviceId", created_at AS "createdAt", paired_at AS "pairedAt", expires_at AS "expiresAt"
                FROM trucodes WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
        ]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        let (t, u) = (user.tenant, user.username)
        let approvals = try await conn.query("DELETE FROM approvals WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        // The vault's copy of each document's personal data goes with the pii part (the user's
        // subject is shredded there).
        let documents = try await conn.query("DELETE FROM identity_documents WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        let qrSessions = try await conn.query(
            "DELETE FROM qr_sessions WHERE tenant_id = \(t) AND (username = \(u) OR claimed_username = \(u))").affectedRows
        let truCodes = try await conn.query("DELETE FROM trucodes WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        // A bound device is the user's phone: its keys, push token and model go with them.
        let devices = try await conn.query("DELETE FROM devices WHERE tenant_id = \(t) AND username = \(u)").affectedRows
        return ["approvals": approvals, "devices": devices, "identityDocuments": documents, "qrSessions": qrSessions, "truCodes": truCodes]
    }
}
