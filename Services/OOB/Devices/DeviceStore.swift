import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit
import Tokens

/// A row of `devices`.
struct StoredDevice: Sendable {
    var id: String
    var tenant: String
    var thumbprint: String
    /// The device key, a public JWK as JSON text.
    var deviceKey: String
    var userAuthKey: String?
    var platform: String
    var model: String?
    var osVersion: String?
    var appId: String
    var sealedPushToken: [UInt8]?
    var pushTokenInvalidAt: Date?
    var username: String?
    /// `ACTIVE` or `REVOKED`.
    var status: String
    var createdAt: Date
    var updatedAt: Date
    var lastSeenAt: Date

    var securityEnabled: Bool { userAuthKey != nil }

    func resource(inactiveAfter: TimeInterval, now: Date = Date()) -> DeviceResource {
        DeviceResource(
            deviceId: id, platform: platform, model: model, osVersion: osVersion, appId: appId, username: username, status: status,
            securityEnabled: securityEnabled, active: now.timeIntervalSince(lastSeenAt) <= inactiveAfter,
            pushEnabled: sealedPushToken != nil && pushTokenInvalidAt == nil, createdAt: createdAt, lastSeenAt: lastSeenAt)
    }

    /// The event of `change`: the user named by subject reference (`key`), never the username.
    func changed(_ change: String, at now: Date, key: SubjectKey) -> DeviceChanged {
        DeviceChanged(
            tenantId: tenant, deviceId: id, status: status, subjectRef: username.map { key.ref(tenant: tenant, username: $0) }, platform: platform, securityEnabled: securityEnabled,
            userAuthKey: userAuthKey, change: change,
            changedAt: now, lastSeenAt: lastSeenAt)
    }
}

/// The devices and the nonces of their proofs: owns the SQL of `devices` and
/// `device_proof_nonces`, and seals push tokens (`SIGNET_OOB_KEY_SEAL`; associated data
/// `push-token/<tenant>/<device id>`, so a sealed token moved to another row does not open).
struct DeviceStore: DeviceKeyDirectory {
    let pool: PostgresPool
    let seal: SealingKeys
    /// Names a `seen` event's user by reference (nil: no `seen` events, as in tests that do
    /// not consume them).
    var subjectKey: SubjectKey? = nil
    /// A device that calls again after this long without a call is announced (`seen`), so that
    /// consumers know its last call to this precision.
    static let seenAnnouncementInterval: TimeInterval = 86_400

    // MARK: - DeviceKeyDirectory

    func deviceKey(tenant: String, deviceId: String) async throws -> JWK? {
        guard DeviceID.isValid(deviceId) else { return nil }
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT device_key FROM devices WHERE id = \(deviceId) AND tenant_id = \(tenant) AND status = 'ACTIVE'")
        }.first
        return try row?.string("device_key").map { try JWK(json: $0) }
    }

    func rememberNonce(_ nonce: String, tenant: String, holder: String, until: Date) async throws -> Bool {
        try await pool.withTransaction { conn in
            let inserted = try await conn.query(
                """
                INSERT INTO device_proof_nonces (tenant_id, holder, nonce, expires_at) VALUES (\(tenant), \(holder), \(nonce), \(until))
                ON CONFLICT DO NOTHING RETURNING nonce
                """)
            guard !inserted.isEmpty else { return false }
            if DeviceID.isValid(holder) { try await seen(holder, tenant: tenant, on: conn) }
            return true
        }
    }

    /// Records the device's call. A call after ``seenAnnouncementInterval`` or more without one
    /// also announces the device (`DeviceChanged` `seen`, with the new `lastSeenAt`), in the
    /// same transaction: rules elsewhere judge inactivity by it.
    ///
    /// One statement on every device call: the row is locked and its previous `last_seen_at`
    /// read in the CTE (so that two calls at once cannot both announce), and the update returns
    /// the updated row for the rare announcement.
    private func seen(_ id: String, tenant: String, on conn: PostgresConnection) async throws {
        let now = Date()
        guard let subjectKey else {
            try await conn.query("UPDATE devices SET last_seen_at = \(now) WHERE id = \(id) AND tenant_id = \(tenant)")
            return
        }
        let rows = try await conn.query(
            """
            WITH prior AS (SELECT id, last_seen_at FROM devices WHERE id = \(id) AND tenant_id = \(tenant) FOR UPDATE)
            UPDATE devices d SET last_seen_at = \(now) FROM prior WHERE d.id = prior.id AND d.tenant_id = \(tenant)
            RETURNING d.*, prior.last_seen_at AS previously_seen_at
            """)
        guard let row = rows.first, let before = row.date("previously_seen_at"), now.timeIntervalSince(before) >= Self.seenAnnouncementInterval,
            let device = Self.device(from: row), device.status == "ACTIVE"
        else { return }
        try await Outbox.enqueue(device.changed("seen", at: now, key: subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
    }

    /// Deletes the nonces of proofs that can no longer be fresh, in batches of `limit`
    /// (``BatchedDelete``).
    ///
    /// - Returns: how many were deleted.
    @discardableResult
    func purgeNonces(before now: Date, limit: Int = BatchedDelete.batchSize) async throws -> Int {
        try await pool.withConnection { conn in
            try await BatchedDelete.drain(
                limit: limit, on: conn,
                """
                DELETE FROM device_proof_nonces WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM device_proof_nonces WHERE expires_at < \(now) LIMIT \(limit)))
                AND expires_at < \(now)
                """)
        }
    }

    // MARK: - Devices

    static func find(tenant: String, thumbprint: String, on conn: PostgresConnection) async throws -> StoredDevice? {
        try await conn.query("SELECT * FROM devices WHERE tenant_id = \(tenant) AND key_thumbprint = \(thumbprint) FOR UPDATE")
            .first.flatMap(device(from:))
    }

    /// The tenant's device `id`, or nil.
    static func load(_ id: String, tenant: String, on conn: PostgresConnection, forUpdate: Bool = false) async throws -> StoredDevice? {
        guard DeviceID.isValid(id) else { return nil }
        let rows =
            forUpdate
            ? try await conn.query("SELECT * FROM devices WHERE id = \(id) AND tenant_id = \(tenant) FOR UPDATE")
            : try await conn.query("SELECT * FROM devices WHERE id = \(id) AND tenant_id = \(tenant)")
        return rows.first.flatMap(device(from:))
    }

    /// The user's active devices, oldest first.
    static func devices(of username: String, tenant: String, on conn: PostgresConnection) async throws -> [StoredDevice] {
        try await conn.query(
            "SELECT * FROM devices WHERE tenant_id = \(tenant) AND username = \(username) AND status = 'ACTIVE' ORDER BY created_at, id"
        ).compactMap(device(from:))
    }

    static func insert(_ d: StoredDevice, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO devices (id, tenant_id, key_thumbprint, device_key, user_auth_key, platform, model, os_version, app_id, sealed_push_token,
                push_token_invalid_at, username, status, created_at, updated_at, last_seen_at)
            VALUES (\(d.id), \(d.tenant), \(d.thumbprint), \(d.deviceKey), \(d.userAuthKey), \(d.platform), \(d.model), \(d.osVersion), \(d.appId),
                \(d.sealedPushToken.map(PostgresBytes.init)), \(d.pushTokenInvalidAt), \(d.username), \(d.status), \(d.createdAt), \(d.updatedAt),
                \(d.lastSeenAt))
            """)
    }

    static func update(_ d: StoredDevice, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            UPDATE devices SET user_auth_key = \(d.userAuthKey), platform = \(d.platform), model = \(d.model), os_version = \(d.osVersion),
                app_id = \(d.appId), sealed_push_token = \(d.sealedPushToken.map(PostgresBytes.init)), push_token_invalid_at = \(d.pushTokenInvalidAt),
                username = \(d.username), status = \(d.status), updated_at = \(d.updatedAt), last_seen_at = \(d.lastSeenAt)
            WHERE id = \(d.id) AND tenant_id = \(d.tenant)
            """)
    }

    static func device(from row: PostgresRow) -> StoredDevice? {
        guard let id = row.string("id"), let tenant = row.string("tenant_id"), let thumbprint = row.string("key_thumbprint"),
            let deviceKey = row.string("device_key"), let platform = row.string("platform"), let appId = row.string("app_id"),
            let status = row.string("status"), let created = row.date("created_at"), let updated = row.date("updated_at"),
            let seen = row.date("last_seen_at")
        else { return nil }
        return StoredDevice(
            id: id, tenant: tenant, thumbprint: thumbprint, deviceKey: deviceKey, userAuthKey: row.string("user_auth_key"), platform: platform,
            model: row.string("model"), osVersion: row.string("os_version"), appId: appId, sealedPushToken: row.bytes("sealed_push_token"),
            pushTokenInvalidAt: row.date("push_token_invalid_at"), username: row.string("username"), status: status, createdAt: created,
            updatedAt: updated, lastSeenAt: seen)
    }

    // MARK: - Push tokens

    /// The associated data a push token is sealed with: a sealed token moved to another row
    /// does not open.
    static func pushTokenBinding(tenant: String, device: String) -> [UInt8] { Array("push-token/\(tenant)/\(device)".utf8) }

    func sealPushToken(_ token: String, tenant: String, device: String) throws -> [UInt8] {
        try seal.seal(Array(token.utf8), associatedData: Self.pushTokenBinding(tenant: tenant, device: device))
    }

    /// The device's push token, or nil (none, gone, or sealed under another key).
    func pushToken(of d: StoredDevice) -> String? {
        guard d.pushTokenInvalidAt == nil, let sealed = d.sealedPushToken,
            let plain = try? seal.open(sealed, associatedData: Self.pushTokenBinding(tenant: d.tenant, device: d.id))
        else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }
}
