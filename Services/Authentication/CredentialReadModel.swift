import Crypto
import Postgres
import Schema
import ServiceKit

/// The authentication service's copy of registration's WebAuthn credentials (`credentials`),
/// kept from `CredentialRegistered` and `CredentialStatusChanged` events: what assertions are
/// verified against. Keyed by the owner's subject reference (the event carries no username);
/// ``SubjectUsernames`` tells the username of a credential found without one.
enum CredentialReadModel {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(CredentialRegistered.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId), let handle = Base64URL.decode(e.userHandle),
                let key = Base64URL.decode(e.publicKeyCose)
            else { throw EventDecodingError.invalidData("base64url") }
            try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, subject_ref, user_handle, public_key_cose, algorithm, sign_count,
                    backup_eligible, backup_state, transports, registered_at, aaguid)
                VALUES (\(e.tenantId), \(PostgresBytes(id)), \(e.subjectRef), \(PostgresBytes(handle)), \(PostgresBytes(key)),
                    \(e.algorithm), \(e.signCount), \(e.backupEligible), \(e.backupState), \(PostgresArray(e.transports)), \(e.registeredAt),
                    \(e.aaguid)::uuid)
                ON CONFLICT DO NOTHING
                """)
        }
        h.on(CredentialStatusChanged.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            // Resuming a credential (an administrator's decision) also lifts a clone suspicion.
            try await conn.query(
                """
                UPDATE credentials SET status = \(e.status), clone_suspected = clone_suspected AND \(e.status) <> 'active'
                WHERE tenant_id = \(e.tenantId) AND credential_id = \(PostgresBytes(id))
                """)
        }
        return h
    }

    /// The user's active credentials as allow-list descriptors, oldest first.
    static func activeDescriptors(tenant: String, subjectRef: String, pool: PostgresPool) async throws -> [CredentialDescriptorJSON] {
        let rows = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials
                WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND status = 'active' ORDER BY registered_at
                """)
        }
        return rows.compactMap { row in
            guard let id = row.bytes("credential_id") else { return nil }
            return CredentialDescriptorJSON(id: Base64URL.encode(id), transports: row.stringArray("transports"))
        }
    }
}
