import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// The tenants registration owns (`tenants`). Every change commits with its `TenantUpserted`
/// event (with the new `revision`), so every other service's tenant table follows; an unchanged
/// tenant emits nothing.
struct TenantStore: Sendable {
    let context: ServiceContext

    /// Creates the tenant or updates it to `body`.
    ///
    /// - Returns: the tenant, and whether it was created.
    /// - Throws: 409 `conflict` when a concurrent change won twice in a row.
    func upsert(_ id: String, _ body: TenantUpsertRequest) async throws -> (tenant: TenantResource, created: Bool) {
        for attempt in 1...2 {
            do {
                let result = try await context.withTransaction { conn in try await upsert(id, body, on: conn) }
                context.tenants.invalidate()
                return result
            } catch let error as PostgresError where error.isUniqueViolation && attempt == 1 {
                continue  // a concurrent create won the race: update instead
            }
        }
        throw HTTPError(.conflict, detail: "The tenant changed concurrently; retry.")
    }

    private func upsert(_ id: String, _ body: TenantUpsertRequest, on conn: PostgresConnection) async throws -> (TenantResource, Bool) {
        let existing = try await conn.query(
            "SELECT id, display_name, rp_id, array_to_json(origins)::text AS origins, revision, updated_at FROM tenants WHERE id = \(id) FOR UPDATE")
        let now = Date()
        let revision: Int
        if let row = existing.first {
            guard let current = TenantDirectory.resource(from: row) else { throw HTTPError(.internalError) }
            if current.displayName == body.displayName && current.rpId == body.rpId && current.origins == body.origins {
                return (current, false)
            }
            revision = current.revision + 1
            try await conn.query(
                """
                UPDATE tenants SET display_name = \(body.displayName), rp_id = \(body.rpId),
                    origins = \(PostgresArray(body.origins)), revision = \(revision), updated_at = \(now)
                WHERE id = \(id)
                """)
        } else {
            revision = 1
            try await conn.query(
                """
                INSERT INTO tenants (id, display_name, rp_id, origins, revision, updated_at)
                VALUES (\(id), \(body.displayName), \(body.rpId), \(PostgresArray(body.origins)), 1, \(now))
                """)
        }
        let event = TenantUpserted(
            tenantId: id, displayName: body.displayName, rpId: body.rpId, origins: body.origins, revision: revision, updatedAt: now)
        try await Outbox.enqueue(event, source: .registration, subject: id, key: id, on: conn)
        let tenant = TenantResource(id: id, displayName: body.displayName, rpId: body.rpId, origins: body.origins, revision: revision, updatedAt: now)
        return (tenant, existing.isEmpty)
    }

    /// Locks the tenant's row against deletion for the caller's transaction.
    ///
    /// - Throws: 404 `tenant_not_found`.
    static func requireTenant(_ id: String, on conn: PostgresConnection) async throws {
        guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(id) FOR SHARE").first != nil else {
            throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
        }
    }
}
