import Crypto
import Postgres
import ServiceKit

/// The authentication service's copies of the TOTP secrets (`user_methods.sealed_secret`, as the
/// registration service sealed them: `SIGNET_METHOD_SECRET_KEY`, the tenant and method id),
/// for ``KeyResealer``.
enum MethodSecretsColumn {
    static func column(keys: SealingKeys) -> SealedColumn {
        SealedColumn(
            name: "user_methods.sealed_secret", variable: "SIGNET_METHOD_SECRET_KEY", keys: keys,
            read: { after, limit, conn in
                let rows =
                    if let after {
                        try await conn.query(
                            """
                            SELECT tenant_id, method_id, sealed_secret FROM user_methods
                            WHERE sealed_secret IS NOT NULL AND (tenant_id, method_id) > (\(after[0]), \(after[1]))
                            ORDER BY tenant_id, method_id LIMIT \(limit)
                            """)
                    } else {
                        try await conn.query(
                            """
                            SELECT tenant_id, method_id, sealed_secret FROM user_methods WHERE sealed_secret IS NOT NULL
                            ORDER BY tenant_id, method_id LIMIT \(limit)
                            """)
                    }
                return rows.compactMap { row in
                    guard let tenant = row.string("tenant_id"), let method = row.string("method_id"), let sealed = row.bytes("sealed_secret") else {
                        return nil
                    }
                    return SealedColumn.Value(position: [tenant, method], sealed: sealed, associatedData: CodeMethodKeys.secretBinding(tenant: tenant, method: method))
                }
            },
            replace: { value, resealed, conn in
                try await conn.query(
                    """
                    UPDATE user_methods SET sealed_secret = \(PostgresBytes(resealed))
                    WHERE tenant_id = \(value.position[0]) AND method_id = \(value.position[1]) AND sealed_secret = \(PostgresBytes(value.sealed))
                    """
                ).affectedRows == 1
            })
    }
}
