import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// A user's non-FIDO methods (`user_methods`): set up PENDING_CONFIRMATION, ACTIVE once a first
/// code confirms them, DELETED when removed or when a setup is abandoned (the row stays, its
/// secrets cleared). Activation and removal commit with their `MethodChanged` event; a code's
/// delivery request commits with the method it confirms.
struct MethodStore: Sendable {
    let context: ServiceContext
    /// Wrong codes a setup takes before it must start again.
    static let maximumConfirmAttempts = 5
    /// How long a setup waits for its first code: a method still PENDING_CONFIRMATION this long
    /// after it was set up is abandoned (an e-mailed or SMS code expired after five minutes; a
    /// user who never scanned a TOTP QR code, or mistyped the address, sets it up again), and
    /// ``removeAbandoned(now:limit:maxBatches:)`` removes it with the vault's copy of its
    /// address or number.
    static let abandonedAfter: TimeInterval = 86_400

    /// A method set up and waiting for its first code.
    struct Pending: Sendable {
        var id: String
        var tenant: String
        var username: String
        var type: String
        /// The vault reference and masked form of an address or number (`email_otp`, `sms_otp`).
        var piiRef: String?
        var masked: String?
        /// The keyed hash of the code delivered, and its expiry (`email_otp`, `sms_otp`).
        var codeHash: [UInt8]?
        var codeExpiresAt: Date?
        /// The sealed TOTP secret (`totp`).
        var sealedSecret: [UInt8]?
        var friendlyName: String?
        var createdAt: Date
    }

    /// What the caller found of a code given for a pending method.
    enum Check: Sendable {
        /// Right; for TOTP, the time step it matched (later codes must be of later steps).
        case accepted(lastTotpStep: Int?)
        case refused
    }

    /// Stores a pending method, with the delivery request of its code when it has one.
    func insert(_ method: Pending, delivery: DeliveryRequested?) async throws {
        try await context.withTransaction { conn in
            try await ErasureStore.requireNoErasureInProgress(tenant: method.tenant, username: method.username, on: conn)
            try await SignUpClaim.enforce(tenant: method.tenant, username: method.username, subjectKey: context.configuration.subjectKey, on: conn)
            try await conn.query(
                """
                INSERT INTO user_methods (id, tenant_id, username, type, status, pii_ref, masked, sealed_secret, code_hash, code_expires_at,
                    friendly_name, created_at)
                VALUES (\(method.id), \(method.tenant), \(method.username), \(method.type), 'PENDING_CONFIRMATION', \(method.piiRef),
                    \(method.masked), \(method.sealedSecret.map(PostgresBytes.init)), \(method.codeHash.map(PostgresBytes.init)),
                    \(method.codeExpiresAt), \(method.friendlyName), \(method.createdAt))
                """)
            if let delivery {
                try await Outbox.enqueue(delivery, source: .registration, subject: method.tenant, key: method.tenant, on: conn)
            }
        }
    }

    /// Confirms the user's pending method `id`: `check` decides on the code (under the row's
    /// lock, so parallel guesses are counted one by one); a refusal counts an attempt, an
    /// acceptance activates the method with its `MethodChanged` event.
    ///
    /// - Returns: the active method, or nil when `check` refused the code.
    /// - Throws: 404 `not_found`; 409 `method_already_confirmed`, `user_erasure_pending`; 400
    ///   `too_many_attempts` once the attempts are used up; whatever `check` throws.
    func confirm(
        id: String, tenant: String, username: String, at now: Date, check: @Sendable (Pending) throws -> Check
    ) async throws -> MethodResource? {
        try await context.withTransaction { conn -> MethodResource? in
            try await ErasureStore.requireNoErasureInProgress(tenant: tenant, username: username, on: conn)
            guard let row = try await conn.query(
                """
                SELECT type, status, pii_ref, masked, sealed_secret, code_hash, code_expires_at, confirm_attempts, friendly_name, created_at
                FROM user_methods WHERE id = \(id) AND tenant_id = \(tenant) AND username = \(username) FOR UPDATE
                """
            ).first, let type = row.string("type"), let created = row.date("created_at")
            else { throw HTTPError(.notFound, detail: "No such method for this user.") }
            // Removed, by the user or as an abandoned setup: gone, as for rename and removal.
            guard row.string("status") != "DELETED" else { throw HTTPError(.notFound, detail: "No such method for this user.") }
            guard row.string("status") == "PENDING_CONFIRMATION" else {
                throw HTTPError(.methodAlreadyConfirmed, detail: "This method is already confirmed.")
            }
            guard (row.int("confirm_attempts") ?? 0) < Self.maximumConfirmAttempts else {
                throw HTTPError(.tooManyConfirmAttempts, detail: "Too many wrong codes; set the method up again.")
            }
            let pending = Pending(
                id: id, tenant: tenant, username: username, type: type, piiRef: row.string("pii_ref"), masked: row.string("masked"),
                codeHash: row.bytes("code_hash"), codeExpiresAt: row.date("code_expires_at"), sealedSecret: row.bytes("sealed_secret"),
                friendlyName: row.string("friendly_name"), createdAt: created)
            guard case .accepted(let lastStep) = try check(pending) else {
                try await conn.query("UPDATE user_methods SET confirm_attempts = confirm_attempts + 1 WHERE id = \(id)")
                return nil
            }
            try await conn.query(
                "UPDATE user_methods SET status = 'ACTIVE', confirmed_at = \(now), code_hash = NULL, code_expires_at = NULL WHERE id = \(id)")
            try await Outbox.enqueue(
                MethodChanged(
                    tenantId: tenant, subjectRef: context.configuration.subjectKey.ref(tenant: tenant, username: username), methodId: id, type: type, status: "ACTIVE", piiRef: pending.piiRef,
                    masked: pending.masked, sealedSecret: pending.sealedSecret.map(Base64URL.encode), lastTotpStep: lastStep, changedAt: now),
                source: .registration, subject: tenant, key: tenant, on: conn)
            return MethodResource(
                methodId: id, type: type, status: "ACTIVE", masked: pending.masked, friendlyName: pending.friendlyName, createdAt: created,
                confirmedAt: now)
        }
    }

    /// Every method of the user not deleted, FIDO credentials first (as `fido2`, ACTIVE or
    /// SUSPENDED), each kind oldest first.
    func list(tenant: String, username: String) async throws -> [MethodResource] {
        let (methods, credentials, uafKeys) = try await context.pool.withConnection { conn in
            (
                try await conn.query(
                    """
                    SELECT id, type, status, masked, friendly_name, created_at, confirmed_at FROM user_methods
                    WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'DELETED' ORDER BY created_at
                    """),
                try await conn.query(
                    """
                    SELECT credential_id, status, friendly_name, created_at FROM credentials
                    WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted' ORDER BY created_at
                    """),
                try await conn.query(
                    """
                    SELECT aaid, key_id, status, friendly_name, created_at FROM uaf_registrations
                    WHERE tenant_id = \(tenant) AND username = \(username) AND status <> 'deleted' ORDER BY created_at, aaid, key_id
                    """)
            )
        }
        var list = credentials.compactMap { row -> MethodResource? in
            guard let id = row.bytes("credential_id"), let created = row.date("created_at") else { return nil }
            return MethodResource(
                methodId: Base64URL.encode(id), type: "fido2", status: row.string("status") == "active" ? "ACTIVE" : "SUSPENDED",
                friendlyName: row.string("friendly_name"), createdAt: created, confirmedAt: created)
        }
        // FIDO UAF keys, as `uaf` with the id `<AAID>:<KeyID>` (deregistered through
        // …/uaf/registrations/{aaid}/{keyId}).
        list += uafKeys.compactMap { row -> MethodResource? in
            guard let aaid = row.string("aaid"), let keyID = row.bytes("key_id"), let created = row.date("created_at") else { return nil }
            return MethodResource(
                methodId: "\(aaid):\(Base64URL.encode(keyID))", type: "uaf", status: row.string("status") == "active" ? "ACTIVE" : "SUSPENDED",
                friendlyName: row.string("friendly_name"), createdAt: created, confirmedAt: created)
        }
        list += methods.compactMap { row -> MethodResource? in
            guard let id = row.string("id"), let type = row.string("type"), let status = row.string("status"), let created = row.date("created_at") else { return nil }
            return MethodResource(
                methodId: id, type: type, status: status, masked: row.string("masked"), friendlyName: row.string("friendly_name"), createdAt: created,
                confirmedAt: row.date("confirmed_at"))
        }
        return list
    }

    /// Renames the user's method `id`.
    ///
    /// - Throws: 404 `not_found` for a method the user does not have (or removed).
    func rename(id: String, tenant: String, username: String, to friendlyName: String) async throws {
        let updated = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                UPDATE user_methods SET friendly_name = \(friendlyName)
                WHERE id = \(id) AND tenant_id = \(tenant) AND username = \(username) AND status <> 'DELETED'
                """)
        }
        guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No such method for this user.") }
    }

    /// Removes the user's method `id` (its secrets and vault reference cleared) with its
    /// `MethodChanged` event, which names the reference for the pii service to delete the value.
    ///
    /// - Throws: 404 `not_found` for a method the user does not have (or removed).
    func remove(id: String, tenant: String, username: String, at now: Date) async throws {
        try await context.withTransaction { conn in
            guard let row = try await conn.query(
                """
                UPDATE user_methods m SET status = 'DELETED', code_hash = NULL, sealed_secret = NULL, pii_ref = NULL, deleted_at = \(now)
                FROM (SELECT id, pii_ref FROM user_methods WHERE id = \(id) FOR UPDATE) old
                WHERE m.id = old.id AND m.tenant_id = \(tenant) AND m.username = \(username) AND m.status <> 'DELETED'
                RETURNING m.type, old.pii_ref
                """
            ).first, let type = row.string("type")
            else { throw HTTPError(.notFound, detail: "No such method for this user.") }
            // The event names the vault reference so that the pii service deletes the address or
            // number with the method; this service forgets the reference (the masked form stays
            // in the method's history).
            try await enqueueRemoval(id: id, tenant: tenant, username: username, type: type, piiRef: row.string("pii_ref"), at: now, on: conn)
        }
    }

    /// Removes the setups abandoned before `now` (``abandonedAfter``) as ``remove(id:tenant:username:at:)``
    /// removes a method: DELETED, code, secret and vault reference cleared, with the
    /// `MethodChanged` event naming the reference, on which the pii service deletes the address
    /// or number. Oldest first, `limit` a batch, at most `maxBatches` batches a pass; each setup
    /// in a transaction of its own under its user's erasure lock (``ErasureStore/lockUser(tenant:username:on:)``),
    /// as every write to a user is: a user whose erasure is in progress is left to it (the
    /// erasure deletes the method and the vault its value; nothing is published for that user
    /// meanwhile), and a setup confirmed or removed meanwhile is not taken.
    ///
    /// - Returns: setups removed.
    func removeAbandoned(now: Date, limit: Int = 500, maxBatches: Int = 20) async throws -> Int {
        let cutoff = now.addingTimeInterval(-Self.abandonedAfter)
        var total = 0
        for _ in 0..<maxBatches {
            try Task.checkCancellation()
            let candidates = try await context.pool.withConnection { conn in
                try await conn.query(
                    """
                    SELECT m.id, m.tenant_id, m.username FROM user_methods m
                    WHERE m.status = 'PENDING_CONFIRMATION' AND m.created_at < \(cutoff)
                        AND NOT EXISTS (
                            SELECT 1 FROM erasures e WHERE e.tenant_id = m.tenant_id AND e.username = m.username AND e.status = 'PENDING')
                    ORDER BY m.created_at LIMIT \(limit)
                    """)
            }
            for candidate in candidates {
                guard let id = candidate.string("id"), let tenant = candidate.string("tenant_id"), let username = candidate.string("username")
                else { continue }
                let removed = try await context.withTransaction { conn -> Bool in
                    guard try await ErasureStore.lockUserUnlessErasing(tenant: tenant, username: username, on: conn) else { return false }
                    guard let row = try await conn.query(
                        """
                        UPDATE user_methods m SET status = 'DELETED', code_hash = NULL, code_expires_at = NULL, sealed_secret = NULL, pii_ref = NULL,
                            deleted_at = \(now)
                        FROM (SELECT id, pii_ref FROM user_methods WHERE id = \(id) FOR UPDATE) old
                        WHERE m.id = old.id AND m.status = 'PENDING_CONFIRMATION' AND m.created_at < \(cutoff)
                        RETURNING m.type, old.pii_ref
                        """
                    ).first, let type = row.string("type")
                    else { return false }
                    try await enqueueRemoval(id: id, tenant: tenant, username: username, type: type, piiRef: row.string("pii_ref"), at: now, on: conn)
                    return true
                }
                if removed { total += 1 }
            }
            if candidates.count < limit { break }
        }
        return total
    }

    /// Withdraws the value the vault stored, or may have stored, for a setup that then failed
    /// before its method was recorded (the vault's answer lost, a sign-up claim, the database):
    /// the `MethodChanged` event of the method's removal, on which the pii service deletes the
    /// value (and refuses a store under its reference still in flight), with no row here.
    /// Nothing when the user's erasure is in progress: it shreds the value with the rest of the
    /// user's, or when the method was recorded after all (a COMMIT whose outcome was unknown).
    /// Runs to its end when the setup's request was cancelled (past its deadline, whose
    /// cancellation would cancel these statements too). A withdrawal that fails is logged (the
    /// setup's caller reports the setup's own failure).
    func withdraw(piiRef: String, methodID: String, type: String, tenant: String, username: String, at now: Date) async {
        let failure = await InternalCalls.runUncancelled { [self] in
            try await context.withTransaction { conn in
                guard try await ErasureStore.lockUserUnlessErasing(tenant: tenant, username: username, on: conn) else { return }
                // A method recorded after all (its COMMIT's outcome was unknown) keeps its value.
                guard try await conn.query(
                    "SELECT 1 FROM user_methods WHERE tenant_id = \(tenant) AND username = \(username) AND id = \(methodID)"
                ).isEmpty else { return }
                try await enqueueRemoval(id: methodID, tenant: tenant, username: username, type: type, piiRef: piiRef, at: now, on: conn)
            }
        }
        if let error = failure {
            context.logger.warning(
                "a failed method setup's value could not be withdrawn from the vault; it stays under the user's subject until the user's data is erased",
                metadata: [LogKey.tenant: "\(tenant)", "signet.method.id": "\(methodID)", LogKey.error: "\(error)"])
        }
    }

    /// The `MethodChanged` event of a method's removal, naming its vault reference (for the pii
    /// service to delete the value), in `conn`'s transaction.
    private func enqueueRemoval(
        id: String, tenant: String, username: String, type: String, piiRef: String?, at now: Date, on conn: PostgresConnection
    ) async throws {
        try await Outbox.enqueue(
            MethodChanged(
                tenantId: tenant, subjectRef: context.configuration.subjectKey.ref(tenant: tenant, username: username), methodId: id, type: type,
                status: "DELETED", piiRef: piiRef, sealedSecret: nil, lastTotpStep: nil, changedAt: now),
            source: .registration, subject: tenant, key: tenant, on: conn)
    }
}
