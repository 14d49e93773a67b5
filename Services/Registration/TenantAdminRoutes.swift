import Crypto
import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// The admin API for tenants and RP API keys. Every change commits with its event in the
/// outbox, so every other service's tenant table follows.
struct TenantAdminRoutes: Sendable {
    let context: ServiceContext

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}", context.admin) { request, ctx in try await upsertTenant(request, ctx) }
        router.post("/v1/admin/tenants/{tenant}/api-keys", context.admin) { request, ctx in try await issueAPIKey(request, ctx) }
        router.put("/v1/admin/tenants/{tenant}/api-keys/{keyId}", context.admin) { request, ctx in try await importAPIKey(request, ctx) }
        router.delete("/v1/admin/tenants/{tenant}/api-keys/{keyId}", context.admin) { request, ctx in try await revokeAPIKey(request, ctx) }
        router.get("/v1/tenants/{tenant}/api-keys/current", context.relyingParty) { _, ctx in
            guard case .relyingParty(let tenant, let keyID) = ctx.principal else { throw HTTPError(.unauthorized) }
            return try .json(APIKeyIdentity(tenantId: tenant, keyId: keyID))
        }
    }

    /// `PUT /v1/admin/tenants/{tenant}`: 201 when created, 200 when updated or unchanged. An
    /// unchanged tenant emits no event.
    func upsertTenant(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(TenantUpsertRequest.self)
        if let v = body.violation() { throw HTTPError.invalid(v.field, v.message) }
        let tenantID = ctx.parameter("tenant")
        for attempt in 1...2 {
            do {
                let (resource, created) = try await context.withTransaction { conn -> (TenantResource, Bool) in
                    let existing = try await conn.query(
                        "SELECT id, display_name, rp_id, array_to_json(origins)::text AS origins, revision, updated_at FROM tenants WHERE id = \(tenantID) FOR UPDATE")
                    let now = Date()
                    if let row = existing.first {
                        guard let current = TenantDirectory.resource(from: row) else { throw HTTPError(.internalError) }
                        let revision = current.revision
                        if current.displayName == body.displayName && current.rpId == body.rpId && current.origins == body.origins {
                            return (current, false)
                        }
                        try await conn.query(
                            """
                            UPDATE tenants SET display_name = \(body.displayName), rp_id = \(body.rpId),
                                origins = \(PostgresArray(body.origins)), revision = \(revision + 1), updated_at = \(now)
                            WHERE id = \(tenantID)
                            """)
                        let event = TenantUpserted(
                            tenantId: tenantID, displayName: body.displayName, rpId: body.rpId, origins: body.origins,
                            revision: revision + 1, updatedAt: now)
                        try await Outbox.enqueue(event, source: .registration, subject: tenantID, key: tenantID, on: conn)
                        return (TenantResource(id: tenantID, displayName: body.displayName, rpId: body.rpId, origins: body.origins, revision: revision + 1, updatedAt: now), false)
                    }
                    try await conn.query(
                        """
                        INSERT INTO tenants (id, display_name, rp_id, origins, revision, updated_at)
                        VALUES (\(tenantID), \(body.displayName), \(body.rpId), \(PostgresArray(body.origins)), 1, \(now))
                        """)
                    let event = TenantUpserted(
                        tenantId: tenantID, displayName: body.displayName, rpId: body.rpId, origins: body.origins, revision: 1, updatedAt: now)
                    try await Outbox.enqueue(event, source: .registration, subject: tenantID, key: tenantID, on: conn)
                    return (TenantResource(id: tenantID, displayName: body.displayName, rpId: body.rpId, origins: body.origins, revision: 1, updatedAt: now), true)
                }
                context.tenants.invalidate()
                ctx.logger.info(created ? "tenant created" : "tenant updated", metadata: ["signet.revision": "\(resource.revision)"])
                return try .json(resource, status: created ? 201 : 200)
            } catch let error as PostgresError where error.isUniqueViolation && attempt == 1 {
                continue  // a concurrent create won the race: update instead
            }
        }
        throw HTTPError(.conflict, detail: "The tenant changed concurrently; retry.")
    }

    /// `POST /v1/admin/tenants/{tenant}/api-keys`: a new RP API key, shown once.
    func issueAPIKey(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let keyID = "k_" + Hex.encode(SecureRandom.bytes(8))
        let apiKey = "sk_\(keyID)_\(SecureRandom.token(byteCount: 32))"
        let hash = Hex.encode(SHA256.hash(Array(apiKey.utf8)))
        let now = Date()
        try await context.withTransaction { conn in
            guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenantID) FOR SHARE").first != nil else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
            }
            try await conn.query(
                "INSERT INTO tenant_api_keys (key_id, tenant_id, key_hash, created_at) VALUES (\(keyID), \(tenantID), \(hash), \(now))")
            let event = TenantAPIKeyCreated(tenantId: tenantID, keyId: keyID, keyHash: hash, createdAt: now)
            try await Outbox.enqueue(event, source: .registration, subject: tenantID, key: tenantID, on: conn)
        }
        ctx.logger.info("api key issued", metadata: ["signet.key.id": .string(keyID)])
        return try .json(APIKeyIssued(keyId: keyID, apiKey: apiKey, createdAt: now), status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// `PUT /v1/admin/tenants/{tenant}/api-keys/{keyId}`: registers an operator-chosen key under
    /// `keyId`: 201 when new, 200 when that id already holds the same key, 409 when the id or
    /// the key is already used otherwise.
    func importAPIKey(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let keyID = ctx.parameter("keyId")
        guard TenantValidation.isValidKeyID(keyID) else { throw HTTPError.invalid("keyId", "Key ids are k_ and 16 hex digits.") }
        let body = try request.decode(APIKeyImportRequest.self)
        guard (APIKeyRules.minimumLength...APIKeyRules.maximumLength).contains(body.apiKey.utf8.count),
            body.apiKey.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw HTTPError.invalid("apiKey", "apiKey must be \(APIKeyRules.minimumLength)-\(APIKeyRules.maximumLength) printable ASCII characters.")
        }
        let hash = Hex.encode(SHA256.hash(Array(body.apiKey.utf8)))
        let now = Date()
        let created = try await context.withTransaction { conn -> Bool in
            guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenantID) FOR SHARE").first != nil else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
            }
            let existing = try await conn.query(
                "SELECT key_id, tenant_id, key_hash, revoked_at FROM tenant_api_keys WHERE key_id = \(keyID) OR key_hash = \(hash)")
            if let row = existing.first {
                if existing.count == 1, row.string("key_id") == keyID, row.string("tenant_id") == tenantID,
                    row.string("key_hash") == hash, row.string("revoked_at") == nil
                {
                    return false
                }
                throw HTTPError(.conflict, detail: "This key id or key is already in use.")
            }
            try await conn.query(
                "INSERT INTO tenant_api_keys (key_id, tenant_id, key_hash, created_at) VALUES (\(keyID), \(tenantID), \(hash), \(now))")
            try await Outbox.enqueue(
                TenantAPIKeyCreated(tenantId: tenantID, keyId: keyID, keyHash: hash, createdAt: now), source: .registration,
                subject: tenantID, key: tenantID, on: conn)
            return true
        }
        if created { ctx.logger.info("api key imported", metadata: ["signet.key.id": .string(keyID)]) }
        return try .json(APIKeyIdentity(tenantId: tenantID, keyId: keyID), status: created ? 201 : 200)
    }

    /// `DELETE /v1/admin/tenants/{tenant}/api-keys/{keyId}`: 204, or 404 for an unknown or
    /// already revoked key.
    func revokeAPIKey(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let keyID = ctx.parameter("keyId")
        guard TenantValidation.isValidKeyID(keyID) else { throw HTTPError.invalid("keyId", "Key ids are k_ and 16 hex digits.") }
        let now = Date()
        try await context.withTransaction { conn in
            let updated = try await conn.query(
                "UPDATE tenant_api_keys SET revoked_at = \(now) WHERE key_id = \(keyID) AND tenant_id = \(tenantID) AND revoked_at IS NULL")
            guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No active key with this id for this tenant.") }
            try await Outbox.enqueue(
                TenantAPIKeyRevoked(tenantId: tenantID, keyId: keyID, revokedAt: now), source: .registration, subject: tenantID,
                key: tenantID, on: conn)
        }
        context.tenants.invalidate()
        ctx.logger.info("api key revoked", metadata: ["signet.key.id": .string(keyID)])
        return HTTPResponse(status: 204)
    }
}
