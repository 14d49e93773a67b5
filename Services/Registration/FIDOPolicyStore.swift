import FIDO
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// Per-tenant FIDO policies (`fido_policies`), stored as `FIDO.FIDOPolicy`'s canonical
/// document.
struct FIDOPolicyStore: Sendable {
    let pool: PostgresPool
    /// The FIDO metadata, for the models a minimum certification level admits at sign-in;
    /// nil when the deployment has none (then no model meets a minimum).
    var metadata: MetadataService? = nil

    /// A stored policy document that no longer reads as a policy: never taken for the
    /// consumer default, which could be looser than what the tenant set.
    struct UnreadablePolicy: Error, CustomStringConvertible {
        let tenant: String
        let reason: String
        var description: String { "the stored FIDO policy of a tenant does not read: \(reason)" }
    }

    /// The tenant's policy, or the consumer default when it has none.
    ///
    /// - Throws: ``UnreadablePolicy`` (a 500) when the stored document does not read.
    func policy(for tenant: String) async throws -> FIDOPolicy {
        let rows = try await pool.withConnection { try await $0.query("SELECT document FROM fido_policies WHERE tenant_id = \(tenant)") }
        guard let text = rows.first?.string("document") else { return .consumerDefault }
        do {
            return try FIDOPolicy(document: Array(text.utf8))
        } catch {
            throw UnreadablePolicy(tenant: tenant, reason: error.reason)
        }
    }

    /// Stores `policy` as the tenant's, with the `FIDOPolicyChanged` event that gives sign-in
    /// its part (user verification, algorithms, models) in the same transaction.
    ///
    /// - Throws: 404 `tenant_not_found`.
    func put(_ policy: FIDOPolicy, tenant: String, at now: Date, context: ServiceContext) async throws {
        let document = String(decoding: policy.document(), as: UTF8.self)
        try await context.withTransaction { conn in
            guard try await conn.query("SELECT 1 FROM tenants WHERE id = \(tenant) FOR SHARE").first != nil else {
                throw HTTPError(.tenantNotFound, detail: "No tenant with this id.")
            }
            try await conn.query(
                """
                INSERT INTO fido_policies (tenant_id, document, updated_at) VALUES (\(tenant), \(document), \(now))
                ON CONFLICT (tenant_id) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
                """)
            try await Outbox.enqueue(
                Self.changedEvent(policy, tenant: tenant, at: now, metadata: metadata), source: .registration, subject: tenant, key: tenant, on: conn)
        }
    }

    /// Publishes again the policies that set a minimum certification level, with the models
    /// `metadata` now certifies (newer metadata was loaded: a model certified higher, revoked,
    /// or new). Returns how many were published.
    static func republishCertified(metadata: MetadataService, context: ServiceContext, at now: Date) async throws -> Int {
        try await context.withTransaction { conn in
            // The row lock orders this against a PUT of the same policy.
            let rows = try await conn.query("SELECT tenant_id, document FROM fido_policies ORDER BY tenant_id FOR UPDATE")
            var published = 0
            for row in rows {
                guard let tenant = row.string("tenant_id"), let text = row.string("document") else { continue }
                // An unreadable document is an error at PUT and GET; here it is left for them.
                guard let policy = try? FIDOPolicy(document: Array(text.utf8)), policy.minimumCertificationLevel != nil else { continue }
                try await Outbox.enqueue(
                    changedEvent(policy, tenant: tenant, at: now, metadata: metadata), source: .registration, subject: tenant, key: tenant, on: conn)
                published += 1
            }
            return published
        }
    }

    /// What sign-in applies of `policy`: with a minimum certification level, the models that
    /// `metadata` certifies at that level or above and does not report revoked or compromised
    /// (registration's rule, `FIDOPolicy.evaluate`; U2F models known only by attestation key
    /// identifier have no AAGUID to list).
    static func changedEvent(_ policy: FIDOPolicy, tenant: String, at now: Date, metadata: MetadataService?) -> FIDOPolicyChanged {
        var certified: [String]?
        if let minimum = policy.minimumCertificationLevel {
            let entries = metadata?.blob?.entries ?? []
            certified = Set(
                entries.compactMap { entry -> String? in
                    guard let aaguid = entry.aaguid, !entry.isRevokedOrCompromised, let level = entry.certificationLevel, level >= minimum else { return nil }
                    return aaguid.description
                }
            ).sorted()
        }
        return FIDOPolicyChanged(
            tenantId: tenant, userVerification: policy.userVerification.rawValue, allowedAlgorithms: policy.allowedAlgorithms.map(\.rawValue),
            allowedAaguids: policy.allowedAAGUIDs.map { $0.map(\.description).sorted() }, disallowedAaguids: policy.disallowedAAGUIDs.map(\.description).sorted(),
            appId: policy.appId, minimumCertificationLevel: policy.minimumCertificationLevel?.rawValue, certifiedAaguids: certified, changedAt: now)
    }
}
