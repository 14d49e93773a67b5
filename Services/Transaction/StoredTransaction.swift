import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema

/// A row of `transactions`.
struct StoredTransaction: Sendable {
    var id: String
    var tenant: String
    var username: String
    var details: TransactionDetails
    var payerAccount: String?
    var customFields: [String: String]?
    var status: String
    var revision: Int
    var createdAt: Date
    var expiresAt: Date
    var updatedAt: Date
    var tcToken: String?
    var evidence: String?

    var detailsHash: [UInt8] { SHA256.hash(Array(details.canonicalJSON.utf8)) }

    /// The status as of `now`: a PENDING transaction past its expiry reads EXPIRED at once,
    /// before the expirer's next pass stores it (a confirmation is refused from that instant
    /// too: every check compares with the expiry).
    func effectiveStatus(at now: Date) -> String {
        status == "PENDING" && expiresAt <= now ? "EXPIRED" : status
    }

    /// The RP's view of the transaction, with its status as of `now`.
    func resource(at now: Date = Date()) -> TransactionResource {
        TransactionResource(
            transactionId: id, status: effectiveStatus(at: now), detailsHash: Base64URL.encode(detailsHash), username: username, details: details,
            payerAccount: payerAccount, customFields: customFields, createdAt: createdAt, expiresAt: expiresAt, updatedAt: updatedAt, tcToken: tcToken)
    }

    /// The event of its current state: the user named by subject reference (`key`), never the username.
    func changedEvent(_ key: SubjectKey) -> TransactionChanged {
        TransactionChanged(
            tenantId: tenant, transactionId: id, revision: revision, status: status, subjectRef: key.ref(tenant: tenant, username: username), details: details,
            detailsHash: Base64URL.encode(detailsHash), expiresAt: expiresAt, changedAt: updatedAt)
    }

    /// A stored document: JSON written by the strict JSON module.
    private static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONValueEncoder().encodeToBytes(value), as: UTF8.self)
    }

    func insert(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO transactions (id, tenant_id, username, details, details_hash, payer_account, custom_fields, status, revision,
                created_at, expires_at, updated_at)
            VALUES (\(id), \(tenant), \(username), \(try Self.json(details)), \(PostgresBytes(detailsHash)), \(payerAccount),
                \(try customFields.map(Self.json)), \(status), \(revision), \(createdAt), \(expiresAt), \(updatedAt))
            """)
    }

    func update(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE transactions SET details = \(try Self.json(details)), details_hash = \(PostgresBytes(detailsHash)), status = \(status),
                revision = \(revision), updated_at = \(updatedAt), tc_token = \(tcToken), evidence = \(evidence)
            WHERE id = \(id)
            """)
    }

    /// The transaction `id` of `tenant`, or 404 `transaction_not_found`.
    static func load(_ id: String, tenant: String, on conn: PostgresConnection, forUpdate: Bool) async throws -> StoredTransaction {
        let notFound = HTTPError(.transactionNotFound, detail: "No such transaction.")
        guard TransactionID.isValid(id) else { throw notFound }
        let rows =
            forUpdate
            ? try await conn.query(
                """
                SELECT id, tenant_id, username, details, payer_account, custom_fields, status, revision, created_at, expires_at, updated_at,
                    tc_token, evidence FROM transactions WHERE id = \(id) AND tenant_id = \(tenant) FOR UPDATE
                """)
            : try await conn.query(
                """
                SELECT id, tenant_id, username, details, payer_account, custom_fields, status, revision, created_at, expires_at, updated_at,
                    tc_token, evidence FROM transactions WHERE id = \(id) AND tenant_id = \(tenant)
                """)
        guard let row = rows.first, let username = row.string("username"), let detailsText = row.string("details"), let status = row.string("status"),
            let revision = row.int("revision"), let created = row.date("created_at"), let expires = row.date("expires_at"),
            let updated = row.date("updated_at")
        else { throw notFound }
        // Stored documents that do not read back are an error (a 500), never a transaction
        // without its details or custom fields.
        let decoder = JSONValueDecoder()
        let details = try decoder.decode(TransactionDetails.self, from: Array(detailsText.utf8))
        let customFields = try row.string("custom_fields").map { try decoder.decode([String: String].self, from: Array($0.utf8)) }
        return StoredTransaction(
            id: id, tenant: tenant, username: username, details: details, payerAccount: row.string("payer_account"),
            customFields: customFields,
            status: status, revision: revision, createdAt: created, expiresAt: expires, updatedAt: updated, tcToken: row.string("tc_token"),
            evidence: row.string("evidence"))
    }

    /// What presenting a tcToken did.
    enum TCTokenUse { case mismatch, alreadyConsumed, consumed }

    /// Marks the transaction's tcToken `jti` consumed (the caller holds the row's lock).
    static func consumeTCToken(jti: String, transaction id: String, at now: Date, on conn: PostgresConnection) async throws -> TCTokenUse {
        let row = try await conn.query("SELECT tc_jti, tc_consumed_at FROM transactions WHERE id = \(id)").first
        guard row?.string("tc_jti") == jti else { return .mismatch }
        if row?.string("tc_consumed_at") != nil { return .alreadyConsumed }
        try await conn.query("UPDATE transactions SET tc_consumed_at = \(now) WHERE id = \(id)")
        return .consumed
    }
}
