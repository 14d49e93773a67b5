import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// Tenants' RP API keys (`tenant_api_keys`), stored as their SHA-256 (hex) only. Every change
/// commits with its event (`TenantAPIKeyCreated` carries the digest, never the key), which the
/// other services' tenant directories follow.
struct APIKeyStore: Sendable {
    let context: ServiceContext

    /// The stored form of a key.
    static func digest(_ apiKey: String) -> String { Hex.encode(SHA256.hash(Array(apiKey.utf8))) }

    /// Issues a new key for the tenant.
    ///
    /// - Returns: the key, shown once.
    /// - Throws: 404 `tenant_not_found`.
    func issue(tenant: String, at now: Date) async throws -> APIKeyIssued {
        let keyID = "k_" + Hex.encode(SecureRandom.bytes(8))
        let apiKey = "sk_\(keyID)_\(SecureRandom.token(byteCount: 32))"
        let hash = Self.digest(apiKey)
        try await context.withTransaction { conn in
            try await TenantStore.requireTenant(tenant, on: conn)
            try await insert(keyID: keyID, tenant: tenant, hash: hash, at: now, on: conn)
        }
        return APIKeyIssued(keyId: keyID, apiKey: apiKey, createdAt: now)
    }

    /// Registers an operator-chosen key under `keyID`.
    ///
    /// - Returns: true when new, false when that id already holds the same key (nothing changes).
    /// - Throws: 404 `tenant_not_found`; 409 `conflict` when the id or the key is used otherwise.
    func importKey(_ apiKey: String, keyID: String, tenant: String, at now: Date) async throws -> Bool {
        let hash = Self.digest(apiKey)
        return try await context.withTransaction { conn -> Bool in
            try await TenantStore.requireTenant(tenant, on: conn)
            let existing = try await conn.query(
                "SELECT key_id, tenant_id, key_hash, revoked_at FROM tenant_api_keys WHERE key_id = \(keyID) OR key_hash = \(hash)")
            if let row = existing.first {
                if existing.count == 1, row.string("key_id") == keyID, row.string("tenant_id") == tenant,
                    row.string("key_hash") == hash, row.string("revoked_at") == nil
                {
                    return false
                }
                throw HTTPError(.conflict, detail: "This key id or key is already in use.")
            }
            try await insert(keyID: keyID, tenant: tenant, hash: hash, at: now, on: conn)
            return true
        }
    }

    /// Revokes the tenant's key `keyID`.
    ///
    /// - Throws: 404 `not_found` for an unknown or already revoked key.
    func revoke(keyID: String, tenant: String, at now: Date) async throws {
        try await context.withTransaction { conn in
            let updated = try await conn.query(
                "UPDATE tenant_api_keys SET revoked_at = \(now) WHERE key_id = \(keyID) AND tenant_id = \(tenant) AND revoked_at IS NULL")
            guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No active key with this id for this tenant.") }
            try await Outbox.enqueue(
                TenantAPIKeyRevoked(tenantId: tenant, keyId: keyID, revokedAt: now), source: .registration, subject: tenant, key: tenant, on: conn)
        }
        context.tenants.invalidate()
    }

    private func insert(keyID: String, tenant: String, hash: String, at now: Date, on conn: PostgresConnection) async throws {
        try await conn.query(
            "INSERT INTO tenant_api_keys (key_id, tenant_id, key_hash, created_at) VALUES (\(keyID), \(tenant), \(hash), \(now))")
        try await Outbox.enqueue(
            TenantAPIKeyCreated(tenantId: tenant, keyId: keyID, keyHash: hash, createdAt: now), source: .registration, subject: tenant, key: tenant,
            on: conn)
    }
}
