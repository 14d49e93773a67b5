import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema

/// A service's tenant table: the source of truth on the registration service, a read model
/// built from tenant events everywhere else.
///
/// Lookups outside a transaction go through a one-second in-memory cache: every request reads
/// its tenant and most authenticate an API key, and a database round trip each time cost
/// more than the request's own work. A change made on another replica (a revoked key, new
/// origins) is therefore seen here within a second; changes made through this replica call
/// `invalidate()`.
public struct TenantDirectory: Sendable {
    public let pool: PostgresPool
    private let tenantCache = ExpiringCache<String, TenantResource>(lifetime: .seconds(1))
    private let keyCache = ExpiringCache<[UInt8], APIKeyRecord>(lifetime: .seconds(1))

    private struct APIKeyRecord: Sendable {
        let keyID: String
        let tenant: String
        let digest: [UInt8]
    }

    public init(pool: PostgresPool) { self.pool = pool }

    /// Drops cached tenants and API keys, after this replica changed them.
    public func invalidate() {
        tenantCache.removeAll()
        keyCache.removeAll()
    }

    /// The tenant `id`, or nil.
    public func find(_ id: String, on conn: PostgresConnection) async throws -> TenantResource? {
        let rows = try await conn.query(
            "SELECT id, display_name, rp_id, array_to_json(origins)::text AS origins, revision, updated_at FROM tenants WHERE id = \(id)")
        return rows.first.flatMap(TenantDirectory.resource(from:))
    }

    /// The tenant `id`, or nil.
    ///
    /// Served from the cache when looked up within the last second; an unknown tenant is not
    /// cached, so a tenant created a moment ago is found as soon as its event has been applied.
    public func find(_ id: String) async throws -> TenantResource? {
        if let cached = tenantCache.value(for: id) { return cached }
        let found = try await pool.withConnection { try await find(id, on: $0) }
        if let found { tenantCache.set(found, for: id) }
        return found
    }

    /// A tenant from a row of `id, display_name, rp_id, array_to_json(origins)::text AS origins,
    /// revision, updated_at`.
    public static func resource(from row: PostgresRow) -> TenantResource? {
        guard let id = row.string("id"), let name = row.string("display_name"), let rpID = row.string("rp_id"),
            let origins = row.stringArray("origins"), let revision = row.int("revision"), let updated = row.date("updated_at")
        else { return nil }
        return TenantResource(id: id, displayName: name, rpId: rpID, origins: origins, revision: revision, updatedAt: updated)
    }

    // MARK: - Read model

    /// Applies a tenant event: keeps the highest revision, so replays and reordering of older
    /// revisions have no effect.
    public static func apply(_ e: TenantUpserted, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO tenants (id, display_name, rp_id, origins, revision, updated_at)
            VALUES (\(e.tenantId), \(e.displayName), \(e.rpId), \(PostgresArray(e.origins)), \(e.revision), \(e.updatedAt))
            ON CONFLICT (id) DO UPDATE SET display_name = EXCLUDED.display_name, rp_id = EXCLUDED.rp_id,
                origins = EXCLUDED.origins, revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at
            WHERE tenants.revision < EXCLUDED.revision
            """)
    }

    public static func apply(_ e: TenantAPIKeyCreated, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO tenant_api_keys (key_id, tenant_id, key_hash, created_at)
            VALUES (\(e.keyId), \(e.tenantId), \(e.keyHash), \(e.createdAt))
            ON CONFLICT (key_id) DO NOTHING
            """)
    }

    public static func apply(_ e: TenantAPIKeyRevoked, on conn: PostgresConnection) async throws {
        try await conn.query(
            "UPDATE tenant_api_keys SET revoked_at = \(e.revokedAt) WHERE key_id = \(e.keyId) AND tenant_id = \(e.tenantId) AND revoked_at IS NULL")
    }

    /// Handlers that maintain the tenant read model from registration's events.
    public static var readModelHandlers: EventHandlers {
        var h = EventHandlers()
        h.on(TenantUpserted.self) { e, _, conn in try await apply(e, on: conn) }
        h.on(TenantAPIKeyCreated.self) { e, _, conn in try await apply(e, on: conn) }
        h.on(TenantAPIKeyRevoked.self) { e, _, conn in try await apply(e, on: conn) }
        return h
    }

    // MARK: - RP API keys

    /// Authenticates an RP backend by the API key in `Authorization: Bearer`, for `tenant`.
    ///
    /// Keys are found by their SHA-256 (keys are high-entropy secrets, so the digest reveals
    /// nothing useful and the lookup needs no key format); the stored digest is then compared
    /// in constant time and the key's tenant must be the path's.
    ///
    /// - Throws: 401 `unauthorized` for a missing, unknown, revoked or other tenant's key; the
    ///   error does not say which.
    public func authenticateRelyingParty(_ request: HTTPRequest, tenant: String) async throws -> Principal {
        let refused = HTTPError(.unauthorized, detail: "A valid API key is required.", headers: [("WWW-Authenticate", "Bearer")])
        guard let key = request.bearerToken, (APIKeyRules.minimumLength...APIKeyRules.maximumLength).contains(key.utf8.count) else {
            throw refused
        }
        let presented = SHA256.hash(Array(key.utf8))
        var record = keyCache.value(for: presented)
        if record == nil {
            let rows = try await pool.withConnection { conn in
                try await conn.query(
                    "SELECT key_id, key_hash, tenant_id FROM tenant_api_keys WHERE key_hash = \(Hex.encode(presented)) AND revoked_at IS NULL")
            }
            if let row = rows.first, let storedHex = row.string("key_hash"), let stored = Hex.decode(storedHex),
                let keyID = row.string("key_id"), let owner = row.string("tenant_id")
            {
                record = APIKeyRecord(keyID: keyID, tenant: owner, digest: stored)
                keyCache.set(record!, for: presented)
            }
        }
        guard let record, ConstantTime.equals(presented, record.digest), record.tenant == tenant else { throw refused }
        return .relyingParty(tenant: tenant, keyID: record.keyID)
    }

    /// The tenant's public description: `GET /v1/tenants/{tenant}` on every service.
    public func routeGetTenant() -> Handler {
        { _, context in
            guard let tenant = try await find(context.parameter("tenant")) else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id is known to this service.")
            }
            return try .json(tenant)
        }
    }
}
