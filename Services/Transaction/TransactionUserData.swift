import JSON
import Postgres
import ServiceKit

/// What the transaction service holds about a user: the user's transactions (details, status,
/// tcToken and the evidence of the confirmation), the challenges their confirmations spent
/// (``ConsumedEvidence``: a hash and the key's id, nothing personal, but kept per transaction and
/// erased with it) and its records of whose each credential, UAF key and bound device's user-auth key is. A
/// new table keyed by user is added to both functions here (see ``UserDataStore``).
struct TransactionUserData: UserDataStore {
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        let (t, u) = (user.tenant, user.username)
        return [
            "transactions": try await UserErasure.rows(
                """
                SELECT id AS "transactionId", status, details::json AS details, payer_account AS "payerAccount",
                    custom_fields::json AS "customFields", created_at AS "createdAt", updated_at AS "updatedAt", expires_at AS "expiresAt",
                    tc_jti AS "tcTokenId", tc_consumed_at AS "tcTokenConsumedAt", evidence::json AS evidence
                FROM transactions WHERE tenant_id = \(t) AND username = \(u) ORDER BY created_at
                """, on: conn),
            "spentChallenges": try await UserErasure.rows(
                """
                SELECT c.transaction_id AS "transactionId", translate(rtrim(encode(c.challenge, 'base64'), '='), '+/', '-_') AS challenge,
                    c.consumed_at AS "spentAt"
                FROM consumed_evidence c JOIN transactions t ON t.tenant_id = c.tenant_id AND t.id = c.transaction_id
                WHERE t.tenant_id = \(t) AND t.username = \(u) ORDER BY c.consumed_at, c.challenge
                """, on: conn),
            "credentials": try await UserErasure.rows(
                """
                SELECT translate(rtrim(encode(credential_id, 'base64'), '='), '+/', '-_') AS "credentialId", status
                FROM credential_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY credential_id
                """, on: conn),
            "uafAuthenticators": try await UserErasure.rows(
                """
                SELECT aaid, translate(rtrim(encode(key_id, 'base64'), '='), '+/', '-_') AS "keyId", status
                FROM uaf_key_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY aaid, key_id
                """, on: conn),
            "devices": try await UserErasure.rows(
                """
                SELECT device_id AS "deviceId", changed_at AS "changedAt"
                FROM device_key_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef) ORDER BY device_id
                """, on: conn),
        ]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        let (t, u) = (user.tenant, user.username)
        // The spent challenges first: they are found through the user's transactions.
        let spent = try await conn.query(
            """
            DELETE FROM consumed_evidence WHERE tenant_id = \(t)
                AND transaction_id IN (SELECT id FROM transactions WHERE tenant_id = \(t) AND username = \(u))
            """
        ).affectedRows
        return [
            "spentChallenges": spent,
            "transactions": try await conn.query("DELETE FROM transactions WHERE tenant_id = \(t) AND username = \(u)").affectedRows,
            "credentials": try await conn.query("DELETE FROM credential_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows,
            "uafAuthenticators": try await conn.query("DELETE FROM uaf_key_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows,
            "devices": try await conn.query("DELETE FROM device_key_owners WHERE tenant_id = \(t) AND subject_ref = \(user.subjectRef)").affectedRows,
        ]
    }
}
