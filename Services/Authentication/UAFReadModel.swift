import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// The authentication service's copy of registration's FIDO UAF data (`uaf_settings`,
/// `uaf_registrations`), kept from `UAFSettingsChanged` and `UAFAuthenticatorRegistered`
/// events: the trusted facets and policy responses are checked against, and the keys
/// assertions are verified with. Keys are kept by their owner's subject reference (the event
/// carries no username).
enum UAFReadModel {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(UAFAuthenticatorRegistered.self) { e, _, conn in
            guard let keyID = Base64URL.decode(e.keyId), let key = Base64URL.decode(e.publicKey) else {
                throw EventDecodingError.invalidData("base64url")
            }
            try await conn.query(
                """
                INSERT INTO uaf_registrations (tenant_id, aaid, key_id, subject_ref, public_key, key_encoding, signature_algorithm, sign_counter,
                    attestation_type, registered_at, user_verification_details, key_protection)
                VALUES (\(e.tenantId), \(e.aaid), \(PostgresBytes(keyID)), \(e.subjectRef), \(PostgresBytes(key)), \(e.keyEncoding),
                    \(e.signatureAlgorithm), \(Int64(e.signCounter)), \(e.attestationType), \(e.registeredAt),
                    \(e.userVerificationDetails.map(Self.detailsJSON)), \(e.keyProtection.map(PostgresArray.init)))
                ON CONFLICT DO NOTHING
                """)
            if let appID = e.appId {
                try await conn.query(
                    """
                    INSERT INTO uaf_app_ids (tenant_id, app_id, seen_at) VALUES (\(e.tenantId), \(appID), \(e.registeredAt))
                    ON CONFLICT (tenant_id) DO UPDATE SET app_id = EXCLUDED.app_id, seen_at = EXCLUDED.seen_at
                    WHERE uaf_app_ids.seen_at <= EXCLUDED.seen_at
                    """)
            }
        }
        h.on(UAFAuthenticatorStatusChanged.self) { e, _, conn in
            guard let keyID = Base64URL.decode(e.keyId) else { throw EventDecodingError.invalidData("keyId") }
            try await conn.query(
                """
                UPDATE uaf_registrations SET status = \(e.status), clone_suspected = clone_suspected AND \(e.status) <> 'active'
                WHERE tenant_id = \(e.tenantId) AND aaid = \(e.aaid) AND key_id = \(PostgresBytes(keyID))
                """)
        }
        h.on(UAFSettingsChanged.self) { e, _, conn in
            try await conn.query(
                """
                INSERT INTO uaf_settings (tenant_id, facet_ids, policy, revision)
                VALUES (\(e.tenantId), \(PostgresArray(e.facetIds)), \(e.policy.jsonString), \(e.revision))
                ON CONFLICT (tenant_id) DO UPDATE SET facet_ids = EXCLUDED.facet_ids, policy = EXCLUDED.policy, revision = EXCLUDED.revision
                WHERE uaf_settings.revision < EXCLUDED.revision
                """)
        }
        return h
    }

    /// The tenant's trusted facets and policy; a tenant without settings trusts its web origins.
    static func settings(_ tenant: TenantResource, pool: PostgresPool) async throws -> (facetIDs: [String], policy: UAFPolicy) {
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT array_to_json(facet_ids)::text AS facet_ids, policy FROM uaf_settings WHERE tenant_id = \(tenant.id)")
        }.first
        guard let row, let text = row.string("policy") else { return (tenant.origins, .acceptAll) }
        return (row.stringArray("facet_ids") ?? [], try JSONValueDecoder().decode(UAFPolicy.self, from: Array(text.utf8)))
    }

    /// The user's active keys, oldest first: (AAID, base64url KeyID).
    static func activeKeys(tenant: String, subjectRef: String, pool: PostgresPool) async throws -> [(aaid: String, keyID: String)] {
        try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT aaid, key_id FROM uaf_registrations
                WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND status = 'active' AND NOT clone_suspected ORDER BY registered_at, aaid, key_id
                """)
        }.compactMap { row in
            guard let aaid = row.string("aaid"), let keyID = row.bytes("key_id") else { return nil }
            return (aaid, Base64URL.encode(keyID))
        }
    }

    /// A stored key and whose it is.
    struct Stored: Sendable {
        /// The owner's subject reference.
        let subjectRef: String
        let status: String
        let record: UAFRegistrationRecord
    }

    /// The registrations for these (AAID, KeyID) pairs in the tenant.
    static func load(tenant: String, keys: [(aaid: String, keyID: [UInt8])], pool: PostgresPool) async throws -> [Stored] {
        var found: [Stored] = []
        try await pool.withConnection { conn in
            for key in keys {
                let rows = try await conn.query(
                    """
                    SELECT subject_ref, status, clone_suspected, public_key, key_encoding, signature_algorithm, sign_counter, attestation_type,
                        user_verification_details::text AS user_verification_details, array_to_json(key_protection)::text AS key_protection
                    FROM uaf_registrations
                    WHERE tenant_id = \(tenant) AND aaid = \(key.aaid) AND key_id = \(PostgresBytes(key.keyID))
                    """)
                guard let row = rows.first, let subjectRef = row.string("subject_ref"), let publicKey = row.bytes("public_key") else { continue }
                let attestation: UAFTag = row.string("attestation_type") == "basic_full" ? .attestationBasicFull : .attestationBasicSurrogate
                found.append(
                    Stored(
                        // A suspected clone is refused as a suspended key is.
                        subjectRef: subjectRef, status: row.bool("clone_suspected") == true ? "suspended" : row.string("status") ?? "active",
                        record: UAFRegistrationRecord(
                            aaid: key.aaid, keyID: key.keyID, publicKey: publicKey,
                            keyEncoding: UAFKeyEncoding(rawValue: UInt16(clamping: row.int64("key_encoding") ?? 0)),
                            signatureAlgorithm: UAFSignatureAlgorithm(rawValue: UInt16(clamping: row.int64("signature_algorithm") ?? 0)),
                            signCounter: UInt32(clamping: row.int64("sign_counter") ?? 0), attestationType: attestation,
                            // NULL (no statement at registration, or a row older than migration
                            // 193): matched as without metadata, as before.
                            userVerificationDetails: try row.string("user_verification_details").map(Self.details),
                            keyProtection: try row.string("key_protection").map(Self.keyProtection))))
            }
        }
        return found
    }

    // MARK: - Metadata characteristics

    /// `userVerificationDetails` as the `user_verification_details` column's JSON.
    static func detailsJSON(_ details: [[String]]) -> String {
        JSONValue.array(details.map { .array($0.map(JSONValue.string)) }).jsonString
    }

    /// The `user_verification_details` column read back (its JSON, as `settings` reads the policy).
    ///
    /// - Throws: the decoder's error when the stored text is not alternatives of names: the key
    ///   is then refused, never matched as one without metadata (which a `disallowed`
    ///   criterion would not refuse).
    static func details(_ text: String) throws -> [[String]] {
        try JSONValueDecoder().decode([[String]].self, from: Array(text.utf8))
    }

    /// The `key_protection` column, selected as `array_to_json(key_protection)::text`, read back.
    ///
    /// - Throws: as ``details(_:)``.
    static func keyProtection(_ text: String) throws -> [String] {
        try JSONValueDecoder().decode([String].self, from: Array(text.utf8))
    }
}
