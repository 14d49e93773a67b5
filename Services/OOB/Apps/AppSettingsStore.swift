import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// A tenant's app settings (``TenantAppSettings``) and the host → tenant map of its domains,
/// and the SQL that reads and writes them. A domain belongs to one tenant at most
/// (`tenant_domains`' primary key), so a `Host` names one tenant's association files.
struct AppSettingsStore: Sendable {
    let context: ServiceContext

    static let migration = Migration(
        105, "tenant_app_settings",
        """
        -- A tenant's mobile apps and QR defaults (the admin API's document, checked before it is
        -- stored), and the host names whose app association files are the tenant's.
        CREATE TABLE tenant_app_settings (
            tenant_id text PRIMARY KEY,
            document text NOT NULL,
            updated_at timestamptz NOT NULL
        );
        CREATE TABLE tenant_domains (
            domain text PRIMARY KEY,
            tenant_id text NOT NULL REFERENCES tenant_app_settings (tenant_id) ON DELETE CASCADE
        );
        CREATE INDEX tenant_domains_tenant ON tenant_domains (tenant_id);
        """)

    /// Stores `settings` as the tenant's, its domains replacing the tenant's previous ones.
    ///
    /// - Throws: 409 `app_domain_taken` when another tenant holds one of the domains.
    func put(_ settings: TenantAppSettings, tenant: String) async throws {
        let document = String(decoding: try JSONValueEncoder().encodeToBytes(settings), as: UTF8.self)
        do {
            try await context.withTransaction { conn in
                try await conn.query(
                    """
                    INSERT INTO tenant_app_settings (tenant_id, document, updated_at) VALUES (\(tenant), \(document), \(Date()))
                    ON CONFLICT (tenant_id) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
                    """)
                try await conn.query("DELETE FROM tenant_domains WHERE tenant_id = \(tenant)")
                for domain in settings.domains {
                    try await conn.query("INSERT INTO tenant_domains (domain, tenant_id) VALUES (\(domain), \(tenant))")
                }
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw HTTPError(.appDomainTaken, detail: "A domain is another tenant's.", field: "domains")
        }
    }

    /// The tenant's settings, or nil when it has none.
    func get(tenant: String) async throws -> TenantAppSettings? {
        try await context.pool.withConnection { conn in try await Self.settings(of: tenant, on: conn) }
    }

    /// Removes the tenant's settings and domains: true when there were some.
    func delete(tenant: String) async throws -> Bool {
        try await context.pool.withConnection { conn in
            try await conn.query("DELETE FROM tenant_app_settings WHERE tenant_id = \(tenant) RETURNING tenant_id").count > 0
        }
    }

    /// The settings of the tenant that holds `domain`, or nil.
    func settings(forDomain domain: String) async throws -> TenantAppSettings? {
        try await context.pool.withConnection { conn in
            let rows = try await conn.query(
                """
                SELECT s.document FROM tenant_domains d JOIN tenant_app_settings s ON s.tenant_id = d.tenant_id WHERE d.domain = \(domain)
                """)
            return try rows.first?.string("document").map(Self.decode)
        }
    }

    static func settings(of tenant: String, on conn: PostgresConnection) async throws -> TenantAppSettings? {
        try await conn.query("SELECT document FROM tenant_app_settings WHERE tenant_id = \(tenant)").first?.string("document").map(decode)
    }

    // Stored only after ``AppSettingsRules/check(_:origins:)``: a document that no longer
    // reads is an error, never silently empty settings.
    static func decode(_ text: String) throws -> TenantAppSettings {
        try JSONValueDecoder().decode(TenantAppSettings.self, from: Array(text.utf8))
    }
}
