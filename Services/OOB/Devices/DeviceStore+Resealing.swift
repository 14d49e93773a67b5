import Crypto
import Postgres
import ServiceKit

extension DeviceStore {
    /// The devices' push tokens (`devices.sealed_push_token`, sealed under `SIGNET_OOB_KEY_SEAL`
    /// with `push-token/<tenant>/<device id>`), for ``KeyResealer``.
    var sealedPushTokens: SealedColumn {
        SealedColumn(
            name: "devices.sealed_push_token", variable: "SIGNET_OOB_KEY_SEAL", keys: seal,
            read: { after, limit, conn in
                let rows =
                    if let after {
                        try await conn.query(
                            "SELECT id, tenant_id, sealed_push_token FROM devices WHERE sealed_push_token IS NOT NULL AND id > \(after[0]) ORDER BY id LIMIT \(limit)")
                    } else {
                        try await conn.query(
                            "SELECT id, tenant_id, sealed_push_token FROM devices WHERE sealed_push_token IS NOT NULL ORDER BY id LIMIT \(limit)")
                    }
                return rows.compactMap { row in
                    guard let id = row.string("id"), let tenant = row.string("tenant_id"), let sealed = row.bytes("sealed_push_token") else { return nil }
                    return SealedColumn.Value(position: [id], sealed: sealed, associatedData: Array("push-token/\(tenant)/\(id)".utf8))
                }
            },
            replace: { value, resealed, conn in
                try await conn.query(
                    """
                    UPDATE devices SET sealed_push_token = \(PostgresBytes(resealed))
                    WHERE id = \(value.position[0]) AND sealed_push_token = \(PostgresBytes(value.sealed))
                    """
                ).affectedRows == 1
            })
    }
}
