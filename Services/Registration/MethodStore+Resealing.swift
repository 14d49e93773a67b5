import Crypto
import Postgres
import ServiceKit

extension MethodStore {
    /// The TOTP secrets (`user_methods.sealed_secret`, sealed under `SIGNET_METHOD_SECRET_KEY`
    /// with the tenant and method id), for ``KeyResealer``.
    static func sealedSecrets(keys: SealingKeys) -> SealedColumn {
        SealedColumn(
            name: "user_methods.sealed_secret", variable: "SIGNET_METHOD_SECRET_KEY", keys: keys,
            read: { after, limit, conn in
                let rows =
                    if let after {
                        try await conn.query(
                            "SELECT id, tenant_id, sealed_secret FROM user_methods WHERE sealed_secret IS NOT NULL AND id > \(after[0]) ORDER BY id LIMIT \(limit)")
                    } else {
                        try await conn.query("SELECT id, tenant_id, sealed_secret FROM user_methods WHERE sealed_secret IS NOT NULL ORDER BY id LIMIT \(limit)")
                    }
                return rows.compactMap { row in
                    guard let id = row.string("id"), let tenant = row.string("tenant_id"), let sealed = row.bytes("sealed_secret") else { return nil }
                    return SealedColumn.Value(
                        position: [id], sealed: sealed, associatedData: MethodEnrollment.secretBinding(tenant: tenant, method: id))
                }
            },
            replace: { value, resealed, conn in
                try await conn.query(
                    """
                    UPDATE user_methods SET sealed_secret = \(PostgresBytes(resealed))
                    WHERE id = \(value.position[0]) AND sealed_secret = \(PostgresBytes(value.sealed))
                    """
                ).affectedRows == 1
            })
    }
}
