import Crypto
import FoundationEssentials
// IANA time zones (the tenant's `timeZone` setting, here and in Schema's
// AdaptiveSettings.violation(), which this service runs) come from ICU's data through
// FoundationInternationalization: with FoundationEssentials alone TimeZone(identifier:) knows
// only GMT offsets. Linking it costs this service about 4.5 MB of idle RSS (issue 14); the other
// services need no named zone and do not link it.
import FoundationInternationalization
import Postgres
import Rules
import Schema
import ServiceKit
import Tokens
import JSON

/// Reads what sign-in rules may know of a user, and builds the facts document rules see:
/// `signals.*` and `context.*` as sent, `user.*` from this service's own data, `time.*` in the
/// tenant's time zone, `device.*` for the user's bound device named by `signals.deviceId`.
struct UserFactsLoader: Sendable {
    let context: ServiceContext
    let antiHammering: AntiHammering
    /// A device without a call for this long is inactive (`SIGNET_OOB_INACTIVE_DAYS`, read as
    /// the oob service reads it).
    var deviceInactiveAfter: TimeInterval = 90 * 86_400

    func load(tenant: String, username: String?, settings: AuthenticationSettings = AuthenticationSettings()) async throws -> UserFacts {
        guard let username else {
            var anonymous = UserFacts.anonymous
            anonymous.settings = settings
            return anonymous
        }
        // Rows built from registration's events are keyed by the subject reference.
        let subjectRef = context.configuration.subjectKey.ref(tenant: tenant, username: username)
        let (credentialRows, stateRow, methodRows) = try await context.pool.withConnection { conn in
            let credentials = try await conn.query(
                """
                SELECT credential_id, aaguid::text AS aaguid, backup_eligible, backup_state, array_to_json(transports)::text AS transports, user_handle
                FROM credentials
                WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND status = 'active' AND NOT clone_suspected
                ORDER BY registered_at
                """)
            let state = try await conn.query(
                """
                SELECT last_signin_at, registration_answer, registration_answered_at FROM user_state
                WHERE tenant_id = \(tenant) AND username = \(username)
                """
            ).first
            let methods = try await conn.query(
                """
                SELECT method_id, type, pii_ref, masked, sealed_secret FROM user_methods
                WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND status = 'ACTIVE' ORDER BY method_id
                """)
            return (credentials, state, methods)
        }
        let credentials = credentialRows.compactMap { row -> UserFacts.Credential? in
            guard let id = row.bytes("credential_id"), let handle = row.bytes("user_handle") else { return nil }
            return UserFacts.Credential(
                id: Base64URL.encode(id), aaguid: row.string("aaguid"), backupEligible: row.bool("backup_eligible") ?? false,
                backupState: row.bool("backup_state") ?? false, transports: row.stringArray("transports") ?? [], userHandle: Base64URL.encode(handle))
        }
        var user = UserFacts(
            username: username, credentials: credentials, failures: try await antiHammering.record(tenant: tenant, username: username),
            lastSignIn: stateRow?.date("last_signin_at"), registrationAnswer: stateRow?.string("registration_answer"),
            registrationAnsweredAt: stateRow?.date("registration_answered_at"))
        user.methods = methodRows.compactMap { row in
            guard let id = row.string("method_id"), let type = row.string("type") else { return nil }
            return UserFacts.Method(id: id, type: type, piiRef: row.string("pii_ref"), masked: row.string("masked"), sealedSecret: row.bytes("sealed_secret"))
        }
        user.uafKeys = try await UAFReadModel.activeKeys(tenant: tenant, subjectRef: subjectRef, pool: context.pool)
        user.devices = try await context.pool.withConnection { try await DeviceReadModel.devices(tenant: tenant, subjectRef: subjectRef, on: $0) }
        user.deviceInactiveAfter = deviceInactiveAfter
        user.settings = settings
        return user
    }

    /// The facts document for rules.
    static func facts(
        signals: [String: AnyJSON], context: [String: AnyJSON], user: UserFacts, methods: [any AuthenticationMethod], settings: AuthenticationSettings,
        now: Date
    ) -> JSONValue {
        var registered: [JSONValue] = []
        var counts: [String: JSONValue] = [:]
        for method in methods {
            let n = method.capacity(for: user)
            if user.username != nil, n > 0 {
                registered.append(.string(method.name))
                counts[method.name] = .int(Int64(n))
            }
        }
        var userFacts: [String: JSONValue] = [
            "known": .bool(user.username != nil && (!user.credentials.isEmpty || !user.uafKeys.isEmpty)),
            "registeredMethods": .array(registered),
            "methodCounts": .object(counts),
            "authenticators": .array(user.credentials.map { c in
                var o: [String: JSONValue] = [
                    "backupEligible": .bool(c.backupEligible), "backupState": .bool(c.backupState),
                    "transports": .array(c.transports.map(JSONValue.string)),
                ]
                if let a = c.aaguid { o["aaguid"] = .string(a) }
                return .object(o)
            }),
            "synced": .bool(user.credentials.contains { $0.backupEligible }),
            "failedAttempts": .int(Int64(user.failures.failures.values.reduce(0, +))),
            "lockedMethods": .array(user.failures.locked.sorted().map(JSONValue.string)),
        ]
        // The user's bound devices (the oob service's events): how many, whether any is bound
        // and active (used within SIGNET_OOB_INACTIVE_DAYS), whether any has a user-auth key (can
        // answer ESSENTIAL approvals).
        userFacts["devices"] = [
            "count": .int(Int64(user.devices.count)),
            "active": .bool(user.devices.contains { $0.isActive(now: now, inactiveAfter: user.deviceInactiveAfter) }),
            "securityEnabled": .bool(user.devices.contains { $0.securityEnabled }),
        ]
        if let last = user.lastSignIn { userFacts["daysSinceLastSignIn"] = .int(Int64(max(0, now.timeIntervalSince(last)) / 86_400)) }
        if let answer = user.registrationAnswer { userFacts["registrationAnswer"] = .string(answer) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: settings.timeZone) ?? .gmt
        let parts = calendar.dateComponents([.hour, .weekday], from: now)
        // ISO weekday: Monday 1 … Sunday 7 (Calendar counts Sunday 1).
        let isoWeekday = ((parts.weekday ?? 1) + 5) % 7 + 1
        let names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        let time: JSONValue = [
            "hour": .int(Int64(parts.hour ?? 0)), "weekday": .int(Int64(isoWeekday)), "weekdayName": .string(names[isoWeekday - 1]),
        ]
        var document: [String: JSONValue] = [
            "signals": .object(signals), "context": .object(context), "user": .object(userFacts), "time": time,
        ]
        // The device the request comes from, when the app names one of the user's bound devices.
        if case .string(let id)? = signals["deviceId"], let device = user.devices.first(where: { $0.id == id }) {
            document["device"] = [
                "securityEnabled": .bool(device.securityEnabled), "platform": .string(device.platform),
                "active": .bool(device.isActive(now: now, inactiveAfter: user.deviceInactiveAfter)),
            ]
        }
        return .object(document)
    }
}
