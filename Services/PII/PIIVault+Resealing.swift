import Crypto
import Postgres
import ServiceKit

extension PIIVault {
    /// The subjects' data keys (`subject_keys.wrapped_key`, wrapped under `SIGNET_PII_KEK` with
    /// `<tenant>/<subject>`), for ``KeyResealer``. An erased subject's key (NULL) is not read,
    /// and one erased meanwhile is not written back: the update requires the old wrapping.
    var wrappedKeys: SealedColumn {
        SealedColumn(
            name: "subject_keys.wrapped_key", variable: "SIGNET_PII_KEK", keys: kek,
            read: { after, limit, conn in
                let rows =
                    if let after {
                        try await conn.query(
                            """
                            SELECT tenant_id, subject, wrapped_key FROM subject_keys
                            WHERE wrapped_key IS NOT NULL AND (tenant_id, subject) > (\(after[0]), \(after[1]))
                            ORDER BY tenant_id, subject LIMIT \(limit)
                            """)
                    } else {
                        try await conn.query(
                            "SELECT tenant_id, subject, wrapped_key FROM subject_keys WHERE wrapped_key IS NOT NULL ORDER BY tenant_id, subject LIMIT \(limit)")
                    }
                return rows.compactMap { row in
                    guard let tenant = row.string("tenant_id"), let subject = row.string("subject"), let wrapped = row.bytes("wrapped_key") else {
                        return nil
                    }
                    return SealedColumn.Value(position: [tenant, subject], sealed: wrapped, associatedData: Array("\(tenant)/\(subject)".utf8))
                }
            },
            replace: { value, resealed, conn in
                try await conn.query(
                    """
                    UPDATE subject_keys SET wrapped_key = \(PostgresBytes(resealed))
                    WHERE tenant_id = \(value.position[0]) AND subject = \(value.position[1]) AND wrapped_key = \(PostgresBytes(value.sealed))
                    """
                ).affectedRows == 1
            })
    }
}
