import Crypto
import FIDO
import Postgres
import Schema
import ServiceKit

/// The transaction service's own record of whose each FIDO UAF key is, kept from
/// registration's `UAFAuthenticatorRegistered` and `UAFAuthenticatorStatusChanged` events: a
/// UAF confirmation step is accepted only when its key is active, belongs to the transaction's
/// user and is the key registered (the public key, its encoding and signature algorithm come
/// from this record, not from the evidence), and when its assertion verifies offline against
/// the transaction's details (``FIDO/UAFTransactionConfirmation``), naming the tenant's AppID
/// and one of its trusted facets (kept from the same events: the AppID registration announced,
/// the facets of `UAFSettingsChanged` or, without settings, the tenant's web origins).
enum UAFKeyOwners {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(UAFAuthenticatorRegistered.self) { e, _, conn in
            guard let keyID = Base64URL.decode(e.keyId), let key = Base64URL.decode(e.publicKey) else {
                throw EventDecodingError.invalidData("base64url")
            }
            try await conn.query(
                """
                INSERT INTO uaf_key_owners (tenant_id, aaid, key_id, subject_ref, public_key, key_encoding, signature_algorithm, attestation_type, status)
                VALUES (\(e.tenantId), \(e.aaid), \(PostgresBytes(keyID)), \(e.subjectRef), \(PostgresBytes(key)), \(e.keyEncoding),
                    \(e.signatureAlgorithm), \(e.attestationType), 'active')
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
        h.on(UAFSettingsChanged.self) { e, _, conn in
            try await conn.query(
                """
                INSERT INTO uaf_settings (tenant_id, facet_ids, revision) VALUES (\(e.tenantId), \(PostgresArray(e.facetIds)), \(e.revision))
                ON CONFLICT (tenant_id) DO UPDATE SET facet_ids = EXCLUDED.facet_ids, revision = EXCLUDED.revision
                WHERE uaf_settings.revision < EXCLUDED.revision
                """)
        }
        h.on(UAFAuthenticatorStatusChanged.self) { e, _, conn in
            guard let keyID = Base64URL.decode(e.keyId) else { throw EventDecodingError.invalidData("keyId") }
            try await conn.query(
                "UPDATE uaf_key_owners SET status = \(e.status) WHERE tenant_id = \(e.tenantId) AND aaid = \(e.aaid) AND key_id = \(PostgresBytes(keyID))")
        }
        return h
    }

    /// The tenant's AppID and trusted facets as this service knows them, nil while it knows no
    /// AppID for the tenant (no key registered since registration announced it).
    static func context(tenant: String, on conn: PostgresConnection) async throws -> UAFResponseContext? {
        let row = try await conn.query(
            """
            SELECT a.app_id, array_to_json(s.facet_ids)::text AS facet_ids, array_to_json(t.origins)::text AS origins
            FROM uaf_app_ids a LEFT JOIN uaf_settings s ON s.tenant_id = a.tenant_id LEFT JOIN tenants t ON t.id = a.tenant_id
            WHERE a.tenant_id = \(tenant)
            """
        ).first
        guard let row, let appID = row.string("app_id") else { return nil }
        // Settings name the facets exactly; a tenant without settings trusts its web origins.
        let facets = row.string("facet_ids") != nil ? row.stringArray("facet_ids") ?? [] : row.stringArray("origins") ?? []
        return UAFResponseContext(appID: appID, trustedFacetIDs: facets)
    }

    /// Whether `step` (a `uaf` evidence step) was signed by an active UAF key of the user whose
    /// subject reference is `subjectRef` in
    /// `tenant`, registered with the public key the step names, over the dynamic-linking
    /// challenge of `detailsHash` and one of the forms of `details` (its display text or one of
    /// its images: ``Schema/TransactionDetails/uafTransactions``), for the tenant's AppID and
    /// one of its trusted facets.
    static func verifies(
        _ step: SignedAssertionEvidence, of subjectRef: String, tenant: String, detailsHash: [UInt8], details: TransactionDetails,
        on conn: PostgresConnection
    ) async throws -> Bool {
        guard step.format == SignedAssertionEvidence.uafFormat, let aaid = step.aaid, let keyID = Base64URL.decode(step.credentialId), !keyID.isEmpty,
            let assertion = Base64URL.decode(step.authenticatorData), let nonce = Base64URL.decode(step.nonce),
            let claimedKey = Base64URL.decode(step.publicKeyCose)
        else { return false }
        guard let row = try await conn.query(
            """
            SELECT subject_ref, public_key, key_encoding, signature_algorithm, attestation_type, status FROM uaf_key_owners
            WHERE tenant_id = \(tenant) AND aaid = \(aaid) AND key_id = \(PostgresBytes(keyID))
            """
        ).first, let owner = row.string("subject_ref"), let key = row.bytes("public_key"), let encoding = row.int64("key_encoding"),
            let algorithm = row.int64("signature_algorithm"), row.string("status") == "active", ConstantTime.equals(owner, subjectRef),
            key == claimedKey, step.keyEncoding.map(Int64.init) == encoding, step.signatureAlgorithm.map(Int64.init) == algorithm,
            let encodingValue = UInt16(exactly: encoding), let algorithmValue = UInt16(exactly: algorithm)
        else { return false }
        guard let context = try await context(tenant: tenant, on: conn) else { return false }
        let record = UAFRegistrationRecord(
            aaid: aaid, keyID: keyID, publicKey: key, keyEncoding: UAFKeyEncoding(rawValue: encodingValue),
            signatureAlgorithm: UAFSignatureAlgorithm(rawValue: algorithmValue), signCounter: 0,
            attestationType: row.string("attestation_type") == "basic_full" ? .attestationBasicFull : .attestationBasicSurrogate)
        do {
            try UAFTransactionConfirmation.verify(
                assertion: assertion, fcParams: step.clientDataJSON, context: context, record: record, detailsHash: detailsHash, nonce: nonce,
                transactions: details.uafTransactions)
            return true
        } catch {
            return false
        }
    }
}
