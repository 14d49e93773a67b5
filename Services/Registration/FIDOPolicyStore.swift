import FIDO
import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// Per-tenant FIDO policies (`fido_policies`), stored as `FIDO.FIDOPolicy`'s canonical
/// document.
struct FIDOPolicyStore: Sendable {
    let pool: PostgresPool

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
            try await Outbox.enqueue(Self.changedEvent(policy, tenant: tenant, at: now), source: .registration, subject: tenant, key: tenant, on: conn)
        }
    }

    /// What sign-in applies of `policy`.
    static func changedEvent(_ policy: FIDOPolicy, tenant: String, at now: Date) -> FIDOPolicyChanged {
        FIDOPolicyChanged(
            tenantId: tenant, userVerification: policy.userVerification.rawValue, allowedAlgorithms: policy.allowedAlgorithms.map(\.rawValue),
            allowedAaguids: policy.allowedAAGUIDs.map { $0.map(\.description).sorted() }, disallowedAaguids: policy.disallowedAAGUIDs.map(\.description).sorted(),
            appId: policy.appId, changedAt: now)
    }
}
