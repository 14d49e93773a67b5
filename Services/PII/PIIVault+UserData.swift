import Crypto
import FoundationEssentials
import JSON
import Postgres
import Schema
import ServiceKit

/// What the pii service holds about a user (by subject, the user handle): the vault's values,
/// decrypted for the export (each read audited, as every read is), the audit trail of reads of
/// them, and the subject's data key. Erasing destroys the data key (crypto-shredding: a copy of
/// the ciphertext left anywhere can no longer be opened by the vault) and deletes the values.
/// A new table keyed by subject is added to both functions here (see ``UserDataStore``).
extension PIIVault: UserDataStore {
    /// Why the export reads the values (in `pii_reads`).
    static let exportPurpose = "user_data_export"

    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        guard let subject = user.subject else { return ["values": [], "reads": []] }
        let tenant = user.tenant
        let rows = try await conn.query(
            "SELECT ref, kind, ciphertext, masked, created_at FROM pii_values WHERE tenant_id = \(tenant) AND subject = \(subject) ORDER BY created_at")
        // The audit trail as it was before this export's own reads.
        let reads = try await UserErasure.rows(
            """
            SELECT r.at, r.ref, r.reader, r.purpose FROM pii_reads r
            WHERE r.tenant_id = \(tenant) AND r.ref IN (SELECT ref FROM pii_values WHERE tenant_id = \(tenant) AND subject = \(subject))
            ORDER BY r.id
            """, on: conn)
        var values: [JSONValue] = []
        if !rows.isEmpty {
            let dataKey = try AES256GCM(key: try await subjectKey(tenant: tenant, subject: subject, create: false, on: conn))
            let now = Date()
            for row in rows {
                guard let ref = row.string("ref"), let kind = row.string("kind"), let sealed = row.bytes("ciphertext") else { continue }
                var value: JSONValue = ["ref": .string(ref), "kind": .string(kind), "masked": .string(row.string("masked") ?? "")]
                if let created = row.date("created_at") { value = value.merging(["createdAt": .string(Timestamp.format(created))]) }
                if let plain = try? dataKey.open(sealed, associatedData: Array("\(tenant)/\(ref)/\(kind)".utf8)) {
                    value = value.merging(["value": .string(String(decoding: plain, as: UTF8.self))])
                    // Recorded in the export's transaction: no plaintext leaves unrecorded.
                    try await conn.query(
                        "INSERT INTO pii_reads (at, tenant_id, ref, reader, purpose) VALUES (\(now), \(tenant), \(ref), \(reader), \(Self.exportPurpose))")
                }
                values.append(value)
            }
        }
        return ["values": .array(values), "reads": reads]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        guard let subject = user.subject else { return [:] }
        let keys = try await PIIVault.destroyKey(tenant: user.tenant, subject: subject, on: conn)
        let values = try await conn.query("DELETE FROM pii_values WHERE tenant_id = \(user.tenant) AND subject = \(subject)").affectedRows
        return ["dataKeys": keys, "values": values]
    }
}

extension JSONValue {
    /// The object with `other`'s members added (replacing same-named ones); other values unchanged.
    func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case .object(var members) = self else { return self }
        for (k, v) in other { members[k] = v }
        return .object(members)
    }
}
