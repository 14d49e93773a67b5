import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit

/// Consecutive failures per user and method: after `probationAfterFailures` (default 5) a
/// probation of `probationSeconds` (30 s) that doubles with each further failure, and after
/// `lockAfterFailures` (10) a lock that only the relying party or an administrator lifts. A
/// success clears the count. Locks and unlocks are events (`MethodLockChanged`) and facts for
/// rules (`user.lockedMethods`, `user.failedAttempts`).
struct AntiHammering: Sendable {
    let context: ServiceContext

    /// A user's standing for one method.
    enum Standing: Equatable {
        case clear
        case probation(until: Date)
        case locked
    }

    /// Failures of every method of `username`: consecutive counts, locks and probations.
    struct UserRecord: Sendable {
        var failures: [String: Int] = [:]
        var locked: [String] = []
        var probation: [String: Date] = [:]

        func standing(_ method: String, now: Date) -> Standing {
            if locked.contains(method) { return .locked }
            if let until = probation[method], until > now { return .probation(until: until) }
            return .clear
        }
    }

    func record(tenant: String, username: String) async throws -> UserRecord {
        let rows = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT method, consecutive, probation_until, locked_at FROM method_failures
                WHERE tenant_id = \(tenant) AND username = \(username)
                """)
        }
        var r = UserRecord()
        for row in rows {
            guard let method = row.string("method") else { continue }
            r.failures[method] = row.int("consecutive") ?? 0
            if row.string("locked_at") != nil { r.locked.append(method) }
            if let until = row.date("probation_until") { r.probation[method] = until }
        }
        return r
    }

    /// Throws when `method` may not be tried now: 423 `method_locked`, or 429
    /// `method_probation` with `Retry-After`.
    static func require(_ standing: Standing, now: Date) throws {
        if let refusal = refusal(standing, now: now) { throw refusal }
    }

    /// What refuses a guess in `standing`: nil when clear, 423 `method_locked`, or 429
    /// `method_probation` with `Retry-After`.
    static func refusal(_ standing: Standing, now: Date) -> HTTPError? {
        switch standing {
        case .clear: return nil
        case .locked:
            return HTTPError(.methodLocked, detail: "Too many failures: this method is locked until the relying party unlocks it.")
        case .probation(let until):
            let seconds = max(1, Int(until.timeIntervalSince(now).rounded(.up)))
            return HTTPError(
                .methodProbation,
                detail: "Too many failures: try again in \(seconds) s.", headers: [("Retry-After", String(seconds))])
        }
    }

    /// Reserves one guess at `method` before it is evaluated, in one statement under the row's
    /// lock, so that no more guesses are evaluated than the policy allows however many arrive at
    /// once: the guess counts as a failure from here on (a success deletes the count), the
    /// probation that its failure would start is set now (so a parallel guess sees it), and no
    /// guess is admitted while the method is locked, on probation, or at the lock threshold.
    ///
    /// - Returns: `.clear` when the guess may be evaluated; otherwise the standing that refuses
    ///   it (a lock, or a probation; a guess at the threshold while the deciding one is still
    ///   being evaluated gets a one-second probation).
    func reserveAttempt(tenant: String, username: String, method: String, settings: AuthenticationSettings, now: Date) async throws -> Standing {
        let probationAfter = settings.probationAfterFailures
        let seconds = Double(settings.probationSeconds)
        let admitted = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO method_failures AS f (tenant_id, username, method, consecutive, last_failure_at, probation_until)
                VALUES (\(tenant), \(username), \(method), 1, \(now)::timestamptz,
                    CASE WHEN 1 >= \(probationAfter)::int THEN \(now)::timestamptz + make_interval(secs => \(seconds)::float8) END)
                ON CONFLICT (tenant_id, username, method) DO UPDATE SET
                    consecutive = f.consecutive + 1,
                    last_failure_at = EXCLUDED.last_failure_at,
                    probation_until = CASE WHEN f.consecutive + 1 >= \(probationAfter)::int
                        THEN \(now)::timestamptz
                            + make_interval(secs => \(seconds)::float8 * power(2, LEAST(f.consecutive + 1 - \(probationAfter)::int, 20)))
                        ELSE f.probation_until END
                WHERE f.locked_at IS NULL AND f.consecutive < \(settings.lockAfterFailures)::int
                    AND (f.probation_until IS NULL OR f.probation_until <= \(now)::timestamptz)
                RETURNING consecutive
                """)
        }
        if !admitted.isEmpty { return .clear }
        let standing = try await record(tenant: tenant, username: username).standing(method, now: now)
        return standing == .clear ? .probation(until: now.addingTimeInterval(1)) : standing
    }

    /// A reserved guess failed: its count stands (it was taken by ``reserveAttempt``); at the
    /// lock threshold the method locks, with its event in the same transaction.
    ///
    /// - Returns: the standing after the failure.
    func recordFailure(tenant: String, username: String, method: String, settings: AuthenticationSettings, now: Date) async throws -> Standing {
        try await context.withTransaction { conn -> Standing in
            let row = try await conn.query(
                """
                SELECT consecutive, probation_until, locked_at FROM method_failures
                WHERE tenant_id = \(tenant) AND username = \(username) AND method = \(method) FOR UPDATE
                """
            ).first
            // Cleared by a parallel success (or unlocked) meanwhile: this failure stands alone.
            guard let row else {
                try await conn.query(
                    """
                    INSERT INTO method_failures (tenant_id, username, method, consecutive, last_failure_at)
                    VALUES (\(tenant), \(username), \(method), 1, \(now)) ON CONFLICT DO NOTHING
                    """)
                return .clear
            }
            if row.string("locked_at") != nil { return .locked }
            let count = row.int("consecutive") ?? 1
            if count >= settings.lockAfterFailures {
                try await conn.query(
                    """
                    UPDATE method_failures SET locked_at = \(now), probation_until = NULL
                    WHERE tenant_id = \(tenant) AND username = \(username) AND method = \(method)
                    """)
                try await Outbox.enqueue(
                    MethodLockChanged(
                        tenantId: tenant, userHandle: try await userHandle(tenant: tenant, username: username, on: conn), method: method,
                        locked: true, failures: count, changedAt: now),
                    source: .authentication, subject: tenant, key: tenant, on: conn)
                return .locked
            }
            if let until = row.date("probation_until"), until > now { return .probation(until: until) }
            return .clear
        }
    }

    /// A reserved guess was not evaluated to a verdict (the server failed): its count is given
    /// back, and the probation it set in advance with it when it was the one that started it.
    func releaseAttempt(tenant: String, username: String, method: String, settings: AuthenticationSettings) async throws {
        try await context.pool.withConnection { conn in
            try await conn.query(
                """
                UPDATE method_failures SET consecutive = GREATEST(consecutive - 1, 0),
                    probation_until = CASE WHEN consecutive - 1 < \(settings.probationAfterFailures)::int THEN NULL ELSE probation_until END
                WHERE tenant_id = \(tenant) AND username = \(username) AND method = \(method) AND locked_at IS NULL
                """)
        }
    }

    /// A success clears the method's failures (not a lock: a locked method cannot succeed).
    func recordSuccess(tenant: String, username: String, method: String, on conn: PostgresConnection) async throws {
        try await conn.query(
            "DELETE FROM method_failures WHERE tenant_id = \(tenant) AND username = \(username) AND method = \(method) AND locked_at IS NULL")
    }

    /// Lifts a lock or probation (RP or admin). Returns false when there was none.
    func unlock(tenant: String, username: String, method: String) async throws -> Bool {
        let now = Date()
        return try await context.withTransaction { conn -> Bool in
            let deleted = try await conn.query(
                "DELETE FROM method_failures WHERE tenant_id = \(tenant) AND username = \(username) AND method = \(method) RETURNING locked_at")
            guard let row = deleted.first else { return false }
            if row.string("locked_at") != nil {
                try await Outbox.enqueue(
                    MethodLockChanged(
                        tenantId: tenant, userHandle: try await userHandle(tenant: tenant, username: username, on: conn), method: method,
                        locked: false, failures: 0, changedAt: now),
                    source: .authentication, subject: tenant, key: tenant, on: conn)
            }
            return true
        }
    }

    /// The user's handle (registration's opaque id), for events; nil without credentials.
    func userHandle(tenant: String, username: String, on conn: PostgresConnection) async throws -> String? {
        let subjectRef = context.configuration.subjectKey.ref(tenant: tenant, username: username)
        return try await conn.query("SELECT user_handle FROM credentials WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) LIMIT 1")
            .first?.bytes("user_handle").map(Base64URL.encode)
    }
}
