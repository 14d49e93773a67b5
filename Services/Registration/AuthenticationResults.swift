import Crypto
import Foundation
import Postgres
import Schema
import ServiceKit

/// What registration keeps from the authentication service's events: each credential's last
/// use (and backup state then), and suspensions for suspected clones.
enum AuthenticationResults {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        // One per sign-in, so the busiest event: a polled run of them is one statement, the
        // latest use per credential.
        h.onBatch(AuthenticationSucceeded.self) { events, conn in
            var latest: [String: (tenant: String, id: [UInt8], at: Date, backupState: Bool)] = [:]
            for (e, _) in events {
                guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
                let key = e.tenantId + "/" + e.credentialId
                if let seen = latest[key], seen.at >= e.authenticatedAt { continue }
                latest[key] = (e.tenantId, id, e.authenticatedAt, e.backupState)
            }
            let uses = Array(latest.values)
            // Events of one tenant arrive in order, but a replayed older event must not move
            // lastUsedAt backwards.
            try await conn.query(
                """
                UPDATE credentials c SET last_used_at = u.at, backup_state = u.backup_state
                FROM unnest(\(PostgresArray(uses.map(\.tenant)))::text[], \(PostgresArray(uses.map { PostgresBytes($0.id) }))::bytea[],
                  \(PostgresArray(uses.map(\.at)))::timestamptz[], \(PostgresArray(uses.map(\.backupState)))::boolean[])
                  AS u(tenant_id, credential_id, at, backup_state)
                WHERE c.tenant_id = u.tenant_id AND c.credential_id = u.credential_id
                  AND (c.last_used_at IS NULL OR c.last_used_at < u.at)
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
