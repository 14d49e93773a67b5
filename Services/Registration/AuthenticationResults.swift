import Crypto
import FoundationEssentials
import Postgres
import Schema
import ServiceKit

/// What registration keeps from the authentication service's events: each credential's last
/// use (and backup state then), and suspensions for suspected clones (WebAuthn credentials and
/// UAF keys).
enum AuthenticationResults {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        // One per sign-in, so the busiest event: a polled run of them is one statement, the
        // latest use per credential. Idempotent: the statement only moves a credential's last
        // use forward, so a redelivered or older event changes nothing, and no event id is
        // recorded per sign-in.
        h.onBatch(AuthenticationSucceeded.self, idempotent: true) { events, conn in
            var latest: [String: CredentialStore.Use] = [:]
            // A UAF key is named by AAID and KeyID and has no row in `credentials`: its KeyID
            // (chosen by the authenticator) must not touch a WebAuthn credential's last use.
            for (e, _) in events where e.method != "uaf" {
                guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
                let key = e.tenantId + "/" + e.credentialId
                if let seen = latest[key], seen.at >= e.authenticatedAt { continue }
                latest[key] = CredentialStore.Use(tenant: e.tenantId, credentialID: id, at: e.authenticatedAt, backupState: e.backupState)
            }
            // Events of one tenant arrive in order, but a replayed older event must not move
            // lastUsedAt backwards (the store's statement sees to that).
            try await CredentialStore.recordUses(Array(latest.values), on: conn)
        }
        h.on(CredentialCloneSuspected.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            if let aaid = e.aaid {
                try await UAFStore.suspectClone(tenant: e.tenantId, aaid: aaid, keyID: id, at: e.detectedAt, on: conn)
                return
            }
            // The authentication service already refuses the credential; this shows why in the
            // credential list, and resuming it (PATCH status active) lifts the suspicion there.
            try await CredentialStore.suspectClone(tenant: e.tenantId, credentialID: id, on: conn)
        }
        return h
    }
}
