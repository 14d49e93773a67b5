import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// The registration service's FIDO UAF data: per-tenant settings (`uaf_settings`) and the
/// registered authenticator keys (`uaf_registrations`). Every change commits with its event in
/// the outbox; registering consumes the request's challenge (`used_challenges`) in the same
/// transaction.
struct UAFStore: Sendable {
    let context: ServiceContext

    /// A tenant's UAF settings; a tenant that never set them trusts its web origins as facets
    /// and accepts every authenticator Signet can verify.
    struct Settings: Sendable {
        var facetIDs: [String]
        var policy: UAFPolicy
        /// The policy as stored (nil: the default).
        var policyDocument: JSONValue?
        var allowsSurrogateWithoutMetadata: Bool
        var revision: Int
    }

    /// The tenant's settings; nil when it has none.
    ///
    /// - Throws: a 500 when the stored policy no longer reads (never taken for the default).
    func settings(tenant: String) async throws -> Settings? {
        let row = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT array_to_json(facet_ids)::text AS facet_ids, policy, allow_surrogate_without_metadata, revision
                FROM uaf_settings WHERE tenant_id = \(tenant)
                """)
        }.first
        guard let row else { return nil }
        var document: JSONValue?
        var policy = UAFPolicy.acceptAll
        if let text = row.string("policy") {
            let value = try JSONParser.parse(Array(text.utf8))
            document = value
            policy = try JSONValueDecoder().decode(UAFPolicy.self, from: value)
        }
        return Settings(
            facetIDs: row.stringArray("facet_ids") ?? [], policy: policy, policyDocument: document,
            allowsSurrogateWithoutMetadata: row.bool("allow_surrogate_without_metadata") ?? true, revision: Int(row.int64("revision") ?? 1))
    }

    /// Stores the tenant's settings with their `UAFSettingsChanged` event.
    ///
    /// - Throws: 404 `tenant_not_found`.
    func putSettings(tenant: String, facetIDs: [String], policy: JSONValue?, allowsSurrogate: Bool, at now: Date) async throws -> Int {
        let policyText = policy.map { $0.jsonString }
        return try await context.withTransaction { conn in
            guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenant) FOR SHARE").first != nil else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
            }
            let rows = try await conn.query(
                """
                INSERT INTO uaf_settings (tenant_id, facet_ids, policy, allow_surrogate_without_metadata, revision, updated_at)
                VALUES (\(tenant), \(PostgresArray(facetIDs)), \(policyText), \(allowsSurrogate), 1, \(now))
                ON CONFLICT (tenant_id) DO UPDATE SET facet_ids = EXCLUDED.facet_ids, policy = EXCLUDED.policy,
                    allow_surrogate_without_metadata = EXCLUDED.allow_surrogate_without_metadata,
                    revision = uaf_settings.revision + 1, updated_at = EXCLUDED.updated_at
                RETURNING revision
                """)
            let revision = Int(rows.first?.int64("revision") ?? 1)
            let event = UAFSettingsChanged(
                tenantId: tenant, facetIds: facetIDs, policy: policy ?? Self.defaultPolicyDocument, allowSurrogateWithoutMetadata: allowsSurrogate,
                revision: revision, changedAt: now)
            try await Outbox.enqueue(event, source: .registration, subject: tenant, key: tenant, on: conn)
            return revision
        }
    }

    /// `UAFPolicy.acceptAll` as a document.
    static var defaultPolicyDocument: JSONValue { ["accepted": [[["assertionSchemes": ["UAFV1TLV"]]]]] }

    /// Stores verified registrations with their `UAFAuthenticatorRegistered` events, consuming
    /// the request's challenge in the same transaction.
    ///
    /// - Throws: 400 `challenge_replayed`; 409 `uaf_key_exists` for a key already registered.
    func register(
        _ registrations: [UAFVerifiedRegistration], tenant: String, username: String, appID: String, challenge: [UInt8], challengeExpiresAt: Date,
        at now: Date
    ) async throws {
        try await context.withTransaction { conn in
            let used = try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(SHA256.hash(challenge))), \(challengeExpiresAt))
                ON CONFLICT DO NOTHING
                """)
            guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This registration was already completed.") }
            try await ErasureStore.requireNoErasureInProgress(tenant: tenant, username: username, on: conn)
            try await SignUpClaim.enforce(tenant: tenant, username: username, subjectKey: context.configuration.subjectKey, on: conn)
            let subjectRef = context.configuration.subjectKey.ref(tenant: tenant, username: username)
            try await SubjectDirectory.record(tenant: tenant, username: username, subjectRef: subjectRef, on: conn)
            for r in registrations {
                let inserted = try await conn.query(
                    """
                    INSERT INTO uaf_registrations (tenant_id, aaid, key_id, username, public_key, key_encoding, signature_algorithm,
                        sign_counter, reg_counter, attestation_type, authenticator_version, friendly_name, created_at)
                    VALUES (\(tenant), \(r.aaid), \(PostgresBytes(r.keyID)), \(username), \(PostgresBytes(r.publicKey.bytes)),
                        \(Int(r.publicKey.encoding.rawValue)), \(Int(r.publicKey.algorithm.rawValue)), \(Int64(r.signCounter)),
                        \(Int64(r.regCounter)), \(r.attestation.typeName), \(Int(r.authenticatorVersion)), \(r.description), \(now))
                    ON CONFLICT DO NOTHING
                    """)
                guard inserted.affectedRows == 1 else { throw HTTPError(.uafKeyExists, detail: "This authenticator key is already registered.") }
                let event = UAFAuthenticatorRegistered(
                    tenantId: tenant, subjectRef: subjectRef, aaid: r.aaid, keyId: Base64URL.encode(r.keyID), publicKey: Base64URL.encode(r.publicKey.bytes),
                    keyEncoding: Int(r.publicKey.encoding.rawValue), signatureAlgorithm: Int(r.publicKey.algorithm.rawValue),
                    signCounter: Int(r.signCounter), attestationType: r.attestation.typeName, registeredAt: now, appId: appID,
                    // The metadata the policy was matched on here, for sign-in to match the same.
                    userVerificationDetails: r.userVerificationDetails.map(UAFValidation.eventUserVerificationDetails),
                    keyProtection: r.keyProtection.map(UAFValidation.eventKeyProtection))
                try await Outbox.enqueue(event, source: .registration, subject: tenant, key: tenant, on: conn)
            }
        }
    }

    /// The user's UAF registrations (not deleted), oldest first.
    func list(tenant: String, username: String) async throws -> [UAFRegistrationResource] {
        let rows = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT aaid, key_id, attestation_type, signature_algorithm, friendly_name, status, created_at FROM uaf_registrations
                WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted' ORDER BY created_at, aaid, key_id
                """)
        }
        return rows.compactMap { row in
            guard let aaid = row.string("aaid"), let keyID = row.bytes("key_id"), let created = row.date("created_at") else { return nil }
            return UAFRegistrationResource(
                aaid: aaid, keyId: Base64URL.encode(keyID), attestationType: row.string("attestation_type") ?? "",
                signatureAlgorithm: Int(row.int64("signature_algorithm") ?? 0), friendlyName: row.string("friendly_name"),
                status: row.string("status") ?? "active", createdAt: created)
        }
    }

    /// Deregisters the user's key: its row stays, with status `deleted` (the key cannot be
    /// registered again), and `UAFAuthenticatorStatusChanged` is published with it.
    ///
    /// - Throws: 404 `not_found` for a key the user does not have (or deleted).
    func deregister(tenant: String, username: String, aaid: String, keyID: [UInt8], at now: Date) async throws {
        try await context.withTransaction { conn in
            let updated = try await conn.query(
                """
                UPDATE uaf_registrations SET status = 'deleted'
                WHERE tenant_id = \(tenant) AND username = \(username) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID)) AND status <> 'deleted'
                """)
            guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No such UAF key for this user.") }
            try await Outbox.enqueue(
                UAFAuthenticatorStatusChanged(tenantId: tenant, aaid: aaid, keyId: Base64URL.encode(keyID), status: "deleted", changedAt: now),
                source: .registration, subject: tenant, key: tenant, on: conn)
        }
    }

    /// Renames, suspends or resumes the user's key; a status change is published
    /// (`UAFAuthenticatorStatusChanged`), a rename is not (the name stays in this service).
    ///
    /// - Throws: 404 `not_found` for a key the user does not have (or deleted).
    func update(tenant: String, username: String, aaid: String, keyID: [UInt8], friendlyName: String?, status: String?, at now: Date) async throws {
        try await context.withTransaction { conn in
            let rows = try await conn.query(
                """
                SELECT status FROM uaf_registrations
                WHERE tenant_id = \(tenant) AND username = \(username) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID)) AND status <> 'deleted'
                FOR UPDATE
                """)
            guard let row = rows.first else { throw HTTPError(.notFound, detail: "No such UAF key for this user.") }
            if let friendlyName {
                try await conn.query(
                    """
                    UPDATE uaf_registrations SET friendly_name = \(friendlyName)
                    WHERE tenant_id = \(tenant) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID))
                    """)
            }
            if let status, status != row.string("status") {
                try await conn.query(
                    "UPDATE uaf_registrations SET status = \(status) WHERE tenant_id = \(tenant) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID))")
                try await Outbox.enqueue(
                    UAFAuthenticatorStatusChanged(tenantId: tenant, aaid: aaid, keyId: Base64URL.encode(keyID), status: status, changedAt: now),
                    source: .registration, subject: tenant, key: tenant, on: conn)
            }
        }
    }

    /// Suspends an active key suspected of being a clone (its signature counter went back, UAF
    /// Protocol §3.5.7.5 step 4.f), in the consumer's transaction, and publishes the status
    /// change; resuming it (PATCH status active) lifts the suspicion on the authentication side.
    static func suspectClone(tenant: String, aaid: String, keyID: [UInt8], at now: Date, on conn: PostgresConnection) async throws {
        let updated = try await conn.query(
            """
            UPDATE uaf_registrations SET status = 'suspended'
            WHERE tenant_id = \(tenant) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID)) AND status = 'active'
            """)
        guard updated.affectedRows == 1 else { return }
        try await Outbox.enqueue(
            UAFAuthenticatorStatusChanged(tenantId: tenant, aaid: aaid, keyId: Base64URL.encode(keyID), status: "suspended", changedAt: now),
            source: .registration, subject: tenant, key: tenant, on: conn)
    }

    /// One of the user's keys (not deleted).
    func registration(tenant: String, username: String, aaid: String, keyID: [UInt8]) async throws -> UAFRegistrationResource? {
        try await list(tenant: tenant, username: username).first { $0.aaid == aaid && $0.keyId == Base64URL.encode(keyID) }
    }
}
