import FoundationEssentials
import Postgres
import Schema
import ServiceKit

/// The authentication service's record of users' bound devices, from the oob-notification
/// service's `DeviceChanged` events, for rules (`user.devices.*`, `device.*`): one row per
/// active device bound to a user (by subject reference), with whether it has a user-auth key.
/// An unbound or revoked device's row is deleted. Events of one tenant come in order (key
/// `tenant`); a row is replaced only by a change at least as recent.
enum DeviceReadModel {
    /// A bound device as rules see it.
    struct Device: Sendable, Equatable {
        let id: String
        let platform: String
        let securityEnabled: Bool
        /// The device's last call as the oob service announced it (to the day); nil when the
        /// events that built the row carried none (an older producer).
        var lastSeenAt: Date? = nil

        /// Bound and used within `inactiveAfter` (`SIGNET_OOB_INACTIVE_DAYS`), as the oob
        /// service judges its devices; a device whose last call is unknown counts as active.
        func isActive(now: Date, inactiveAfter: TimeInterval) -> Bool {
            guard let lastSeenAt else { return true }
            return now.timeIntervalSince(lastSeenAt) <= inactiveAfter
        }
    }

    static let migration = Migration(
        190, "user_devices",
        """
        -- Users' bound devices, from signet.oob.device.changed.v2: rules see how many a user has
        -- and whether they have a user-auth key (user.devices.*, device.*).
        CREATE TABLE user_devices (
            tenant_id text NOT NULL,
            device_id text NOT NULL,
            subject_ref text NOT NULL,
            platform text NOT NULL,
            security_enabled boolean NOT NULL,
            changed_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, device_id)
        );
        CREATE INDEX user_devices_by_subject ON user_devices (tenant_id, subject_ref);
        """)

    static let lastSeenMigration = Migration(
        191, "user_devices_last_seen",
        """
        -- A device's last call (signet.oob.device.changed.v2 lastSeenAt, to the day): rules see an
        -- inactive device as the oob service does (user.devices.active, device.active).
        ALTER TABLE user_devices ADD COLUMN last_seen_at timestamptz;
        """)

    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(DeviceChanged.self) { e, _, conn in
            guard e.status == "ACTIVE", let owner = e.subjectRef else {
                try await conn.query(
                    "DELETE FROM user_devices WHERE tenant_id = \(e.tenantId) AND device_id = \(e.deviceId) AND changed_at <= \(e.changedAt)")
                return
            }
            try await conn.query(
                """
                INSERT INTO user_devices (tenant_id, device_id, subject_ref, platform, security_enabled, changed_at, last_seen_at)
                VALUES (\(e.tenantId), \(e.deviceId), \(owner), \(e.platform), \(e.securityEnabled), \(e.changedAt), \(e.lastSeenAt))
                ON CONFLICT (tenant_id, device_id) DO UPDATE SET subject_ref = EXCLUDED.subject_ref, platform = EXCLUDED.platform,
                    security_enabled = EXCLUDED.security_enabled, changed_at = EXCLUDED.changed_at,
                    last_seen_at = COALESCE(EXCLUDED.last_seen_at, user_devices.last_seen_at)
                WHERE user_devices.changed_at <= EXCLUDED.changed_at
                """)
        }
        return h
    }

    /// The user's bound devices, oldest change first.
    static func devices(tenant: String, subjectRef: String, on conn: PostgresConnection) async throws -> [Device] {
        try await conn.query(
            """
            SELECT device_id, platform, security_enabled, last_seen_at FROM user_devices
            WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) ORDER BY changed_at, device_id
            """
        ).compactMap { row in
            guard let id = row.string("device_id"), let platform = row.string("platform"), let security = row.bool("security_enabled") else { return nil }
            return Device(id: id, platform: platform, securityEnabled: security, lastSeenAt: row.date("last_seen_at"))
        }
    }
}
