import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// The registration service's WebAuthn credentials (`credentials`, with `used_challenges` for
/// the single use of registration challenges). Every change commits with its event in the
/// outbox; a deleted credential stays as a row with status `deleted`, so its id can never be
/// registered again.
struct CredentialStore: Sendable {
    let context: ServiceContext

    /// A verified credential to store (WebAuthn L3 §7.1 step 27).
    struct NewCredential: Sendable {
        var tenant: String
        var username: String
        var displayName: String
        var userHandle: [UInt8]
        var credentialID: [UInt8]
        var publicKeyCOSE: [UInt8]
        var algorithm: Int
        var signCount: UInt32
        var aaguid: String
        var backupEligible: Bool
        var backupState: Bool
        var userVerified: Bool
        var transports: [String]
        var attestationFormat: String
        var attestationType: String
        var friendlyName: String?
        var deviceName: String? = nil
    }

    /// What a new ceremony needs of the user: the handle when the user exists, and the
    /// credentials to exclude (every one not deleted).
    func existing(tenant: String, username: String) async throws -> (userHandle: [UInt8]?, credentials: [CredentialDescriptorJSON], passkeyOnly: Bool) {
        try await context.pool.withConnection { conn in
            let handle = try await UserStore.handle(tenant: tenant, username: username, on: conn)
            let passkeyOnly = handle == nil ? false : try await UserStore.isPasskeyOnly(tenant: tenant, username: username, on: conn)
            let rows = try await conn.query(
                """
                SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials
                WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted'
                """)
            let descriptors = rows.compactMap { row -> CredentialDescriptorJSON? in
                guard let id = row.bytes("credential_id") else { return nil }
                return CredentialDescriptorJSON(id: Base64URL.encode(id), transports: row.stringArray("transports"))
            }
            return (handle, descriptors, passkeyOnly)
        }
    }

    /// Stores a verified credential with its `CredentialRegistered` event, consuming the
    /// ceremony's challenge in the same transaction (creating the user when new).
    ///
    /// - Throws: 400 `challenge_replayed` when the challenge was used; 409 `conflict` when the
    ///   username was registered concurrently under another handle; 409 `credential_exists`.
    func register(_ new: NewCredential, challenge: [UInt8], challengeExpiresAt: Date, at now: Date) async throws {
        try await context.withTransaction { conn in
            let used = try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(SHA256.hash(challenge))), \(challengeExpiresAt))
                ON CONFLICT DO NOTHING
                """)
            guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This registration was already completed.") }
            try await SignUpClaim.enforce(tenant: new.tenant, username: new.username, subjectKey: context.configuration.subjectKey, on: conn)
            try await UserStore.insert(tenant: new.tenant, username: new.username, handle: new.userHandle, displayName: new.displayName, on: conn)
            guard try await UserStore.handle(tenant: new.tenant, username: new.username, on: conn) == new.userHandle else {
                throw HTTPError(.conflict, detail: "The user was registered concurrently; start again.")
            }
            // A passkey-only account's username is an opaque one the server assigned: the
            // display name its user picks (the registration options' `displayName`) is kept
            // with the user (listed with the credentials, in the user's data, erased with it).
            if new.displayName != new.username {
                try await UserStore.setPickedDisplayName(tenant: new.tenant, username: new.username, displayName: new.displayName, on: conn)
            }
            let inserted = try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, username, user_handle, public_key_cose, algorithm, sign_count, aaguid,
                    backup_eligible, backup_state, user_verified, transports, attestation_format, attestation_type, friendly_name, device_name,
                    created_at)
                VALUES (\(new.tenant), \(PostgresBytes(new.credentialID)), \(new.username), \(PostgresBytes(new.userHandle)),
                    \(PostgresBytes(new.publicKeyCOSE)), \(new.algorithm), \(Int64(new.signCount)), \(new.aaguid), \(new.backupEligible),
                    \(new.backupState), \(new.userVerified), \(PostgresArray(new.transports)), \(new.attestationFormat), \(new.attestationType),
                    \(new.friendlyName), \(new.deviceName), \(now))
                ON CONFLICT DO NOTHING
                """)
            guard inserted.affectedRows == 1 else { throw HTTPError(.credentialExists, detail: "This credential is already registered.") }
            let subjectRef = context.configuration.subjectKey.ref(tenant: new.tenant, username: new.username)
            try await SubjectDirectory.record(tenant: new.tenant, username: new.username, subjectRef: subjectRef, on: conn)
            let event = CredentialRegistered(
                tenantId: new.tenant, subjectRef: subjectRef, userHandle: Base64URL.encode(new.userHandle),
                credentialId: Base64URL.encode(new.credentialID), publicKeyCose: Base64URL.encode(new.publicKeyCOSE), algorithm: new.algorithm,
                signCount: Int(new.signCount), backupEligible: new.backupEligible, backupState: new.backupState, transports: new.transports,
                aaguid: new.aaguid, registeredAt: now)
            try await Outbox.enqueue(event, source: .registration, subject: new.tenant, key: new.tenant, on: conn)
        }
    }

    /// The display name a passkey-only account's user picked (nil for other users).
    func pickedDisplayName(tenant: String, username: String) async throws -> String? {
        try await context.pool.withConnection { conn in try await UserStore.pickedDisplayName(tenant: tenant, username: username, on: conn) }
    }

    // MARK: - Manage

    /// The `status_reason` of a credential its user suspended.
    static let suspendedByUser = "user"

    /// Renames, suspends or resumes the user's credential (`byUser`: at the user's own request,
    /// who may resume only what they suspended); each actual change is an event
    /// (`CredentialRenamed`, `CredentialStatusChanged`), an unchanged value none. Setting a
    /// status clears the reason the service suspended it for.
    ///
    /// - Throws: 404 `not_found` for a credential the user does not have (or deleted).
    func update(
        tenant: String, username: String, credentialID: [UInt8], friendlyName: String?, status: String?, byUser: Bool = false, at now: Date
    ) async throws {
        let id = Base64URL.encode(credentialID)
        try await context.withTransaction { conn in
            let rows = try await conn.query(
                """
                SELECT status, status_reason, friendly_name FROM credentials
                WHERE tenant_id = \(tenant) AND username = \(username) AND credential_id = \(PostgresBytes(credentialID)) AND status <> 'deleted'
                FOR UPDATE
                """)
            guard let row = rows.first else { throw HTTPError(.notFound, detail: "No such credential for this user.") }
            if let friendlyName, friendlyName != row.string("friendly_name") {
                try await conn.query(
                    "UPDATE credentials SET friendly_name = \(friendlyName) WHERE tenant_id = \(tenant) AND credential_id = \(PostgresBytes(credentialID))")
                try await Outbox.enqueue(
                    CredentialRenamed(tenantId: tenant, credentialId: id, renamedAt: now), source: .registration, subject: tenant, key: tenant, on: conn)
            }
            if let status, status != row.string("status") {
                // The user resumes only what the user suspended.
                if byUser, status == "active", row.string("status_reason") != Self.suspendedByUser {
                    throw HTTPError(.forbidden, detail: "Only the relying party can resume this credential.")
                }
                let reason = byUser && status == "suspended" ? Self.suspendedByUser : nil
                try await conn.query(
                    """
                    UPDATE credentials SET status = \(status), status_reason = \(reason)
                    WHERE tenant_id = \(tenant) AND credential_id = \(PostgresBytes(credentialID))
                    """)
                try await Outbox.enqueue(
                    CredentialStatusChanged(tenantId: tenant, credentialId: id, status: status, changedAt: now), source: .registration,
                    subject: tenant, key: tenant, on: conn)
            }
        }
    }

    /// Deregisters the user's credential (status `deleted`) with its event.
    ///
    /// - Throws: 404 `not_found` for a credential the user does not have (or deleted).
    func deregister(tenant: String, username: String, credentialID: [UInt8], at now: Date) async throws {
        try await context.withTransaction { conn in
            let updated = try await conn.query(
                """
                UPDATE credentials SET status = 'deleted', deleted_at = \(now)
                WHERE tenant_id = \(tenant) AND username = \(username) AND credential_id = \(PostgresBytes(credentialID)) AND status <> 'deleted'
                """)
            guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No such credential for this user.") }
            try await Outbox.enqueue(
                CredentialStatusChanged(tenantId: tenant, credentialId: Base64URL.encode(credentialID), status: "deleted", changedAt: now),
                source: .registration, subject: tenant, key: tenant, on: conn)
        }
    }

    // MARK: - Read

    /// The user's credentials (not deleted), oldest first.
    func list(tenant: String, username: String) async throws -> [CredentialResource] {
        let rows = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT credential_id, aaguid::text AS aaguid, attestation_format, attestation_type, algorithm, user_verified,
                       backup_eligible, backup_state, array_to_json(transports)::text AS transports, friendly_name, status,
                       status_reason, created_at, last_used_at, device_name
                FROM credentials WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted'
                ORDER BY created_at
                """)
        }
        return rows.compactMap { row -> CredentialResource? in
            guard let id = row.bytes("credential_id"), let aaguid = row.string("aaguid"), let created = row.date("created_at") else { return nil }
            var resource = CredentialResource(
                credentialId: Base64URL.encode(id), aaguid: aaguid, attestationFormat: row.string("attestation_format") ?? "",
                attestationType: row.string("attestation_type") ?? "", algorithm: row.int("algorithm") ?? 0,
                userVerified: row.bool("user_verified") ?? false, backupEligible: row.bool("backup_eligible") ?? false,
                backupState: row.bool("backup_state") ?? false, transports: row.stringArray("transports") ?? [],
                friendlyName: row.string("friendly_name"), status: row.string("status") ?? "active", statusReason: row.string("status_reason"),
                createdAt: created, lastUsedAt: row.date("last_used_at"))
            resource.deviceName = row.string("device_name")
            return resource
        }
    }

    /// The user's credential `id` (base64url), if not deleted.
    func credential(tenant: String, username: String, id: String) async throws -> CredentialResource? {
        try await list(tenant: tenant, username: username).first { $0.credentialId == id }
    }

    // MARK: - From the authentication service's events

    /// A credential's latest use, and its backup state then.
    struct Use: Sendable {
        let tenant: String
        let credentialID: [UInt8]
        let at: Date
        let backupState: Bool
    }

    /// Records the latest use of each credential, in the consumer's transaction. A replayed
    /// older event never moves `last_used_at` backwards.
    static func recordUses(_ uses: [Use], on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE credentials c SET last_used_at = u.at, backup_state = u.backup_state
            FROM unnest(\(PostgresArray(uses.map(\.tenant)))::text[], \(PostgresArray(uses.map { PostgresBytes($0.credentialID) }))::bytea[],
              \(PostgresArray(uses.map(\.at)))::timestamptz[], \(PostgresArray(uses.map(\.backupState)))::boolean[])
              AS u(tenant_id, credential_id, at, backup_state)
            WHERE c.tenant_id = u.tenant_id AND c.credential_id = u.credential_id
              AND (c.last_used_at IS NULL OR c.last_used_at < u.at)
            """)
    }

    /// Suspends an active credential suspected of being a clone, in the consumer's transaction.
    static func suspectClone(tenant: String, credentialID: [UInt8], on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE credentials SET status = 'suspended', status_reason = 'clone_suspected'
            WHERE tenant_id = \(tenant) AND credential_id = \(PostgresBytes(credentialID)) AND status = 'active'
            """)
    }
}
