import Crypto
import JSON
import Postgres
import Schema
import ServiceKit

/// The authentication service's copy of the transaction service's transactions
/// (`transactions`), kept from `TransactionChanged` events (a newer revision only): what a
/// sign-in that confirms a transaction shows, binds and checks (``PendingTransaction``), and
/// whether it is confirmed yet (its tcToken stays with the transaction service). The user is
/// known by subject reference only.
enum TransactionReadModel {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(TransactionChanged.self) { e, _, conn in
            guard let hash = Base64URL.decode(e.detailsHash) else { throw EventDecodingError.invalidData("detailsHash") }
            let details = String(decoding: try JSONValueEncoder().encodeToBytes(e.details), as: UTF8.self)
            try await conn.query(
                """
                INSERT INTO transactions (tenant_id, id, revision, status, subject_ref, details, details_hash, expires_at)
                VALUES (\(e.tenantId), \(e.transactionId), \(e.revision), \(e.status), \(e.subjectRef), \(details), \(PostgresBytes(hash)),
                    \(e.expiresAt))
                ON CONFLICT (tenant_id, id) DO UPDATE SET revision = EXCLUDED.revision, status = EXCLUDED.status,
                    details = EXCLUDED.details, details_hash = EXCLUDED.details_hash, expires_at = EXCLUDED.expires_at
                WHERE transactions.revision < EXCLUDED.revision
                """)
        }
        return h
    }
}
