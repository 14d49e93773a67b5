import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// A row of `approvals`, and the SQL that reads and writes them.
struct StoredApproval: Sendable {
    var id: String
    var tenant: String
    var username: String
    var deviceId: String?
    var level: ApprovalLevel
    var action: String
    var resource: String
    var text: String?
    var customFields: [String: String]?
    var numberMatching: Bool
    var number: Int?
    var status: String
    var revision: Int
    var reason: String?
    var decidedDeviceId: String?
    var decidedLevel: ApprovalLevel?
    /// Where the outcome is POSTed when the approval finishes (see `ApprovalCallbacks`).
    var callbackURL: String?
    /// For a transaction confirmed by push: base64url SHA-256 of the transaction's details,
    /// part of the approval's details (and so of what the device signs).
    var transactionHash: String? = nil
    /// The decision as the device sent it (kept as evidence for a transaction confirmation):
    /// the key named, base64url r‖s, and the number chosen.
    var decisionSignedWith: String? = nil
    var decisionSignature: String? = nil
    var decisionNumber: Int? = nil
    var createdAt: Date
    var expiresAt: Date
    var updatedAt: Date
    /// The RP lets a user below `level` accept at their highest level (EXECUTIVE approvals).
    var allowLowerLevel = false

    var details: ApprovalDetails {
        ApprovalDetails(level: level.rawValue, action: action, resource: resource, text: text, customFields: customFields, transactionHash: transactionHash)
    }
    var detailsHash: [UInt8] { SHA256.hash(Array(details.canonicalJSON.utf8)) }
    var detailsHashText: String { Base64URL.encode(detailsHash) }

    var resourceForRelyingParty: ApprovalResource {
        ApprovalResource(
            approvalId: id, status: status, level: level.rawValue, username: username, deviceId: deviceId, action: action, resource: self.resource,
            text: text, customFields: customFields, detailsHash: detailsHashText, numberMatching: numberMatching, number: number, createdAt: createdAt,
            expiresAt: expiresAt, updatedAt: updatedAt, decidedDeviceId: decidedDeviceId, decidedLevel: decidedLevel?.rawValue, reason: reason,
            transactionHash: transactionHash)
    }

    /// What the device is shown: never the matching number.
    var resourceForDevice: DeviceApproval {
        DeviceApproval(
            approvalId: id, status: status, level: level.rawValue, action: action, resource: resource, text: text, customFields: customFields,
            detailsHash: detailsHashText, numberMatching: numberMatching, createdAt: createdAt, expiresAt: expiresAt,
            transactionHash: transactionHash)
    }

    /// What the device signed when it decided, or nil before a signed decision;
    /// `keyThumbprint` is the signing key's (the caller reads it from the device).
    func decisionEvidence(keyThumbprint: String) -> ApprovalDecisionEvidence? {
        guard let device = decidedDeviceId, let signedWith = decisionSignedWith, let signature = decisionSignature,
            [ApprovalStatus.rejected, ApprovalStatus.accepted, ApprovalStatus.acceptedAtHigherLevel].contains(status)
        else { return nil }
        // A wrong number rejects an approval the device signed as ACCEPT.
        let decision = status == ApprovalStatus.rejected && reason != "number_mismatch" ? "REJECT" : "ACCEPT"
        let message = ApprovalSignature.message(approvalId: id, detailsHash: detailsHashText, decision: decision, number: decisionNumber)
        return ApprovalDecisionEvidence(
            approvalId: id, deviceId: device, signedWith: signedWith, details: Base64URL.encode(Array(details.canonicalJSON.utf8)),
            message: Base64URL.encode(message), signature: signature, keyThumbprint: keyThumbprint)
    }

    /// The event of its current state: the user named by subject reference (`key`), never the username.
    func changedEvent(_ key: SubjectKey) -> ApprovalChanged {
        ApprovalChanged(
            tenantId: tenant, approvalId: id, revision: revision, status: status, level: level.rawValue,
            subjectRef: key.ref(tenant: tenant, username: username), deviceId: deviceId,
            detailsHash: detailsHashText, numberMatching: numberMatching, decidedDeviceId: decidedDeviceId, decidedLevel: decidedLevel?.rawValue,
            reason: reason, expiresAt: expiresAt, changedAt: updatedAt)
    }

    var isFinished: Bool { status != ApprovalStatus.inProgress }

    private static func json(_ fields: [String: String]) throws -> String {
        String(decoding: try JSONValueEncoder().encodeToBytes(fields), as: UTF8.self)
    }

    func insert(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO approvals (id, tenant_id, username, device_id, level, action, resource, text, custom_fields, details_hash, number_matching,
                number, status, revision, callback_url, transaction_hash, created_at, expires_at, updated_at, allow_lower_level)
            VALUES (\(id), \(tenant), \(username), \(deviceId), \(level.rawValue), \(action), \(resource), \(text), \(try customFields.map(Self.json)),
                \(PostgresBytes(detailsHash)), \(numberMatching), \(number), \(status), \(revision), \(callbackURL), \(transactionHash), \(createdAt), \(expiresAt),
                \(updatedAt), \(allowLowerLevel))
            """)
    }

    /// Writes the outcome: status, revision, reason and who decided at which level.
    func updateOutcome(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE approvals SET status = \(status), revision = \(revision), reason = \(reason), decided_device_id = \(decidedDeviceId),
                decided_level = \(decidedLevel?.rawValue), decision_signed_with = \(decisionSignedWith), decision_signature = \(decisionSignature),
                decision_number = \(decisionNumber), updated_at = \(updatedAt)
            WHERE id = \(id) AND tenant_id = \(tenant)
            """)
    }

    /// The tenant's approval `id`, or nil.
    static func load(_ id: String, tenant: String, on conn: PostgresConnection, forUpdate: Bool = false) async throws -> StoredApproval? {
        guard ApprovalID.isValid(id) else { return nil }
        let rows =
            forUpdate
            ? try await conn.query("SELECT * FROM approvals WHERE id = \(id) AND tenant_id = \(tenant) FOR UPDATE")
            : try await conn.query("SELECT * FROM approvals WHERE id = \(id) AND tenant_id = \(tenant)")
        return try rows.first.map(approval(from:))
    }

    /// The user's approvals in progress that `deviceId` may answer (asked of it, or of any of
    /// the user's devices; with `onlyThisDevice`, only those asked of it), newest first.
    static func pending(
        for username: String, device deviceId: String, onlyThisDevice: Bool, tenant: String, now: Date, on conn: PostgresConnection
    ) async throws -> [StoredApproval] {
        let rows =
            onlyThisDevice
            ? try await conn.query(
                """
                SELECT * FROM approvals WHERE tenant_id = \(tenant) AND username = \(username) AND status = 'IN_PROGRESS' AND expires_at > \(now)
                    AND device_id = \(deviceId) ORDER BY created_at DESC, id LIMIT 50
                """)
            : try await conn.query(
                """
                SELECT * FROM approvals WHERE tenant_id = \(tenant) AND username = \(username) AND status = 'IN_PROGRESS' AND expires_at > \(now)
                    AND (device_id IS NULL OR device_id = \(deviceId)) ORDER BY created_at DESC, id LIMIT 50
                """)
        return try rows.map(approval(from:)).filter { UsernameRules.identical($0.username, username) }
    }

    /// Approvals in progress past their expiry, locked for the expirer (others skip them).
    static func overdue(before now: Date, limit: Int, on conn: PostgresConnection) async throws -> [StoredApproval] {
        try await conn.query(
            "SELECT * FROM approvals WHERE status = 'IN_PROGRESS' AND expires_at <= \(now) ORDER BY expires_at LIMIT \(limit) FOR UPDATE SKIP LOCKED"
        ).map(approval(from:))
    }

    /// Deletes finished approvals last changed before `cutoff` (their events stay the record),
    /// in batches of `limit` (``BatchedDelete``; found by `approvals_finished`). `conn` must not
    /// be inside a transaction.
    ///
    /// - Returns: how many were deleted.
    @discardableResult
    static func purgeFinished(before cutoff: Date, limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM approvals WHERE id IN
                (SELECT id FROM approvals WHERE status <> 'IN_PROGRESS' AND updated_at < \(cutoff) LIMIT \(limit))
            AND status <> 'IN_PROGRESS' AND updated_at < \(cutoff)
            """)
    }

    static func approval(from row: PostgresRow) throws -> StoredApproval {
        guard let id = row.string("id"), let tenant = row.string("tenant_id"), let username = row.string("username"),
            let level = row.string("level").flatMap(ApprovalLevel.init(rawValue:)), let action = row.string("action"),
            let resource = row.string("resource"), let numberMatching = row.bool("number_matching"), let status = row.string("status"),
            let revision = row.int("revision"), let created = row.date("created_at"), let expires = row.date("expires_at"),
            let updated = row.date("updated_at")
        else { throw HTTPError(.approvalNotFound, detail: "No such approval.") }
        // A stored document that no longer reads is an error (a 500), never an approval
        // without its custom fields.
        let fields = try row.string("custom_fields").map { try JSONValueDecoder().decode([String: String].self, from: Array($0.utf8)) }
        return StoredApproval(
            id: id, tenant: tenant, username: username, deviceId: row.string("device_id"), level: level, action: action, resource: resource,
            text: row.string("text"), customFields: fields, numberMatching: numberMatching, number: row.int("number"), status: status,
            revision: revision, reason: row.string("reason"), decidedDeviceId: row.string("decided_device_id"),
            decidedLevel: row.string("decided_level").flatMap(ApprovalLevel.init(rawValue:)), callbackURL: row.string("callback_url"),
            transactionHash: row.string("transaction_hash"), decisionSignedWith: row.string("decision_signed_with"),
            decisionSignature: row.string("decision_signature"), decisionNumber: row.int("decision_number"), createdAt: created, expiresAt: expires,
            updatedAt: updated, allowLowerLevel: row.bool("allow_lower_level") ?? false)
    }
}
