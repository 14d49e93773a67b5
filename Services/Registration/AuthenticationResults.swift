import Crypto
import Postgres
import Schema
import ServiceKit

/// What registration keeps from the authentication service's events: each credential's last
/// use (and backup state then), and suspensions for suspected clones.
enum AuthenticationResults {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(AuthenticationSucceeded.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            // Events of one tenant arrive in order, but a replayed older event must not move
            // lastUsedAt backwards.
            try await conn.query(
                """
                UPDATE credentials SET last_used_at = \(e.authenticatedAt), backup_state = \(e.backupState)
                WHERE tenant_id = \(e.tenantId) AND credential_id = \(PostgresBytes(id))
                  AND (last_used_at IS NULL OR last_used_at < \(e.authenticatedAt))
                """)
        }
        h.on(CredentialCloneSuspected.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            // The authentication service already refuses the credential; this shows why in the
            // credential list, and resuming it (PATCH status active) lifts the suspicion there.
            try await conn.query(
                """
                UPDATE credentials SET status = 'suspended', status_reason = 'clone_suspected'
                WHERE tenant_id = \(e.tenantId) AND credential_id = \(PostgresBytes(id)) AND status = 'active'
                """)
        }
        return h
    }
}
