import Crypto
import FIDO
import Foundation
import Postgres
import Schema
import ServiceKit
import Synchronization

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
                    backup_eligible, backup_state, transports, registered_at)
                VALUES (\(e.tenantId), \(PostgresBytes(id)), \(e.username), \(PostgresBytes(handle)), \(PostgresBytes(key)),
                    \(e.algorithm), \(e.signCount), \(e.backupEligible), \(e.backupState), \(PostgresArray(e.transports)), \(e.registeredAt))
                ON CONFLICT DO NOTHING
                """)
        }
        h.on(CredentialStatusChanged.self) { e, _, conn in
            guard let id = Base64URL.decode(e.credentialId) else { throw EventDecodingError.invalidData("credentialId") }
            try await conn.query(
                "UPDATE credentials SET status = \(e.status) WHERE tenant_id = \(e.tenantId) AND credential_id = \(PostgresBytes(id))")
        }
        return h
    }
}

/// Parsed credential public keys by credential id: building an OpenSSL key costs more than
/// verifying a signature with it, so keys are parsed once per process. Bounded; cleared
/// wholesale when full (keys are cheap to parse again).
final class ParsedKeyCache: Sendable {
    private let keys = Mutex<[[UInt8]: COSEKey]>([:])
    private let capacity: Int

    init(capacity: Int = 50_000) { self.capacity = capacity }

    func key(for credentialID: [UInt8], cose: [UInt8]) -> COSEKey? {
        if let k = keys.withLock({ $0[credentialID] }), k.bytes == cose { return k }
        guard let parsed = try? COSEKey(bytes: cose) else { return nil }
        keys.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[credentialID] = parsed
        }
        return parsed
    }
}
