import Crypto
import FIDO
import Foundation
import Postgres
import Schema
import Platform
import ServiceKit

/// The authentication service's copy of registration's credentials, kept from events.
enum CredentialReadModel {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(CredentialRegistered.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId), let handle = Base64URL.decode(e.userHandle),
                let key = Base64URL.decode(e.publicKeyCose)
            else { throw EventDecodingError.invalidData("base64url") }
            try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, username, user_handle, public_key_cose, algorithm, sign_count,
                    backup_eligible, backup_state, transports, registered_at, aaguid)
                VALUES (\(e.tenantId), \(PostgresBytes(id)), \(e.username), \(PostgresBytes(handle)), \(PostgresBytes(key)),
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
        h.on(MethodChanged.self) { e, _, conn in
            let sealed = e.sealedSecret.flatMap(Base64URL.decode)
            try await conn.query(
                """
                INSERT INTO user_methods (tenant_id, method_id, username, type, status, pii_ref, masked, sealed_secret, last_totp_step)
                VALUES (\(e.tenantId), \(e.methodId), \(e.username), \(e.type), \(e.status), \(e.piiRef), \(e.masked),
                    \(sealed.map(PostgresBytes.init)), \(e.lastTotpStep.map(Int64.init)))
                ON CONFLICT (tenant_id, method_id) DO UPDATE SET status = EXCLUDED.status,
                    pii_ref = COALESCE(EXCLUDED.pii_ref, user_methods.pii_ref), masked = COALESCE(EXCLUDED.masked, user_methods.masked),
                    sealed_secret = CASE WHEN EXCLUDED.status = 'DELETED' THEN NULL ELSE COALESCE(EXCLUDED.sealed_secret, user_methods.sealed_secret) END
                """)
        }
        h.on(TransactionChanged.self) { e, _, conn in
            guard let hash = Base64URL.decode(e.detailsHash) else { throw EventDecodingError.invalidData("detailsHash") }
            let details = String(decoding: try JSONEncoder().encode(e.details), as: UTF8.self)
            try await conn.query(
                """
                INSERT INTO transactions (tenant_id, id, revision, status, username, details, details_hash, expires_at)
                VALUES (\(e.tenantId), \(e.transactionId), \(e.revision), \(e.status), \(e.username), \(details), \(PostgresBytes(hash)),
                    \(e.expiresAt))
                ON CONFLICT (tenant_id, id) DO UPDATE SET revision = EXCLUDED.revision, status = EXCLUDED.status,
                    details = EXCLUDED.details, details_hash = EXCLUDED.details_hash, expires_at = EXCLUDED.expires_at
                WHERE transactions.revision < EXCLUDED.revision
                """)
        }
        return h
    }
}

/// What a sign-in needs of a credential that never changes once registered: its owner, user
/// handle, public key (parsed: building an OpenSSL key costs more than verifying a signature
/// with it) and backup eligibility.
///
/// Mutable state (counter, status, clone flag) is never taken from here: `record_assertion`
/// checks it in the database, in the transaction that consumes the challenge, and also
/// checks that the stored key is still the one verified here.
struct CachedCredential: Sendable {
    let username: String
    let userHandle: [UInt8]
    let publicKeyCOSE: [UInt8]
    let key: COSEKey
    let backupEligible: Bool
}

/// Credentials by tenant and credential id, per process. Bounded: cleared wholesale when full
/// (entries are cheap to read again).
final class CredentialCache: Sendable {
    private struct Key: Hashable {
        let tenant: String
        let credentialID: [UInt8]
    }

    /// Read by every sign-in ceremony: a `PlainLock`, as on the whole request path (see
    /// `RateLimiter` for the figure against an actor hop).
    private let entries = PlainLock<[Key: CachedCredential]>([:])
    private let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func credential(tenant: String, id: [UInt8]) -> CachedCredential? {
        entries.withLock { $0[Key(tenant: tenant, credentialID: id)] }
    }

    func store(_ credential: CachedCredential, tenant: String, id: [UInt8]) {
        entries.withLock { e in
            if e.count >= capacity { e.removeAll(keepingCapacity: true) }
            e[Key(tenant: tenant, credentialID: id)] = credential
        }
    }

    func remove(tenant: String, id: [UInt8]) {
        _ = entries.withLock { $0.removeValue(forKey: Key(tenant: tenant, credentialID: id)) }
    }
}
