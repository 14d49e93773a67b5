import Crypto
import Postgres
import Schema
import ServiceKit

/// The transaction service's own record of whose each credential is, kept from registration's
/// events: a confirmation is accepted only when every signing credential is active, belongs to
/// the transaction's user (by subject reference: `credential.registered.v2` carries no username) and
/// still has the public key the authentication service verified with. The authentication
/// service checks this too; the service that issues the tcToken does not take its word for it.
enum CredentialOwners {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(CredentialRegistered.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId), let key = Base64URL.decode(e.publicKeyCose) else {
                throw EventDecodingError.invalidData("base64url")
            }
            try await conn.query(
                """
                INSERT INTO credential_owners (tenant_id, credential_id, subject_ref, public_key_cose, status)
                VALUES (\(e.tenantId), \(PostgresBytes(id)), \(e.subjectRef), \(PostgresBytes(key)), 'active')
                ON CONFLICT DO NOTHING
                """)
        }
        h.on(CredentialStatusChanged.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            try await conn.query(
                "UPDATE credential_owners SET status = \(e.status) WHERE tenant_id = \(e.tenantId) AND credential_id = \(PostgresBytes(id))")
        }
        return h
    }

    /// Whether `credentialId` (base64url) is an active credential of the user whose subject
    /// reference is `subjectRef` in `tenant`, whose public key is `publicKeyCOSE`.
    static func isActive(
        _ credentialId: String, of subjectRef: String, publicKeyCOSE: [UInt8], tenant: String, on conn: PostgresConnection
    ) async throws -> Bool {
        guard let id = Base64URL.decode(credentialId), !id.isEmpty else { return false }
        guard let row = try await conn.query(
            "SELECT subject_ref, public_key_cose, status FROM credential_owners WHERE tenant_id = \(tenant) AND credential_id = \(PostgresBytes(id))"
        ).first, let owner = row.string("subject_ref"), let key = row.bytes("public_key_cose")
        else { return false }
        return row.string("status") == "active" && ConstantTime.equals(owner, subjectRef) && key == publicKeyCOSE
    }
}
