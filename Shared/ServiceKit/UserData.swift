import Crypto
import Foundation
import HTTPServer
import JSON
import Platform
import Postgres
import Schema

/// The user a fetch or an erasure is about.
public struct UserDataSubject: Sendable {
    public var tenant: String
    public var username: String
    /// The opaque subject (base64url of the user handle) the pii service keys data keys by;
    /// nil for a user the registration service never knew.
    public var subject: String?

    public init(tenant: String, username: String, subject: String?) {
        self.tenant = tenant
        self.username = username
        self.subject = subject
    }
}

/// Everything one service holds about a user, seen from the user's side: what
/// `GET /v1/tenants/{t}/users/{u}/data` shows (``export(_:reader:on:)``) and what the purge
/// saga deletes (``erase(_:on:)``). Each service has one, next to its migrations
/// (`<Service>UserData.swift`): **a new table keyed by user is added to both functions there**,
/// and the stack test of the purge fails while a table still holds the username.
public protocol UserDataStore: Sendable {
    /// The service's part of the user's data: a JSON object of lists by kind. Runs in a
    /// transaction (the pii service records its reads in it).
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue

    /// Deletes every row the service holds for the user, in the caller's transaction (the
    /// consumer's, with the event's dedupe: a replay deletes nothing more).
    ///
    /// - Returns: rows (or keys) deleted, by kind; kinds with 0 are dropped by the caller.
    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int]
}

/// The purge saga's per-service half, and the internal export route, for any ``UserDataStore``.
public enum UserErasure {
    /// On ``UserPurgeRequested``: the store erases the user, the service's outbox loses the
    /// events that named the user (published ones and any still waiting: a purged user's
    /// events are not sent afterwards), and ``ErasurePartCompleted`` with the tallies is
    /// enqueued, all in the consumer's transaction.
    public static func handlers(service: ServiceName, store: some UserDataStore) -> EventHandlers {
        var h = EventHandlers()
        h.on(UserPurgeRequested.self) { e, _, conn in
            let user = UserDataSubject(tenant: e.tenantId, username: e.username, subject: e.subject)
            let tallies = try await store.erase(user, on: conn).filter { $0.value > 0 }
            // The purge request itself stays until the erasure completes: were the cluster
            // replaced before every service had read it, the relay must be able to send it again.
            try await scrubOutbox(tenant: e.tenantId, username: e.username, keepingPurgeRequests: true, on: conn)
            try await Outbox.enqueue(
                ErasurePartCompleted(tenantId: e.tenantId, erasureId: e.erasureId, service: service.rawValue, tallies: tallies, completedAt: Date()),
                source: service, subject: e.tenantId, key: e.tenantId, on: conn)
        }
        return h
    }

    /// Deletes the outbox rows whose event names the user (`tenantId` and `username` members of
    /// the payload), so that no table keeps the username once the purge is done; with
    /// `keepingPurgeRequests`, ``UserPurgeRequested`` rows stay (the registration service drops
    /// them when the erasure completes).
    ///
    /// - Important: reads every outbox row's JSON (the outbox keeps a day of sent rows): fine
    ///   for erasures, which are rare; not for a hot path.
    /// - Returns: how many rows went.
    @discardableResult
    public static func scrubOutbox(
        tenant: String, username: String, keepingPurgeRequests: Bool = false, on conn: PostgresConnection
    ) async throws -> Int {
        let kept = keepingPurgeRequests ? UserPurgeRequested.eventType : ""
        return try await conn.query(
            """
            DELETE FROM outbox WHERE event_type <> \(kept) AND data::jsonb ->> 'tenantId' = \(tenant) AND data::jsonb ->> 'username' = \(username)
            """
        ).affectedRows
    }

    /// `POST /v1/internal/tenants/{tenant}/user-data` `{"username","subject"?}`: the service's
    /// part of the user's data, to the registration service (internal token).
    public static func registerExport(on router: inout GuardedRouter, context: ServiceContext, store: some UserDataStore) {
        let calls = InternalCalls(token: context.configuration.internalToken, service: context.configuration.service.rawValue)
        router.post("/v1/internal/tenants/{tenant}/user-data", calls.guardInternal) { request, ctx in
            guard case .service(let caller) = ctx.principal else { throw HTTPError(.unauthorized) }
            let body = try request.decode(UserDataRequest.self)
            try UsernameRules.require(body.username)
            if let s = body.subject, !(1...64).contains(s.utf8.count) || Base64URL.decode(s) == nil {
                throw HTTPError.invalid("subject", "subject is a base64url user handle.")
            }
            let user = UserDataSubject(tenant: ctx.parameter("tenant"), username: body.username, subject: body.subject)
            let part = try await context.pool.withTransaction { conn in try await store.export(user, reader: caller, on: conn) }
            return try .json(part, headers: [("Cache-Control", "no-store")])
        }
    }

    /// Rows of `query` as a JSON array of objects (column → value, as PostgreSQL's `json_agg`
    /// writes them: timestamps in ISO 8601, bytea as `\x…`; select `encode(col, 'base64')` or
    /// text forms where a reader needs them).
    public static func rows(_ query: PostgresQuery, on conn: PostgresConnection) async throws -> JSONValue {
        let wrapped = PostgresQuery(
            unsafeSQL: "SELECT coalesce(json_agg(t), '[]'::json)::text AS j FROM (\(query.sql)) t", binds: query.binds)
        guard let text = try await conn.query(wrapped).first?.string("j") else { return .array([]) }
        return try JSONParser.parse(Array(text.utf8), maximumDepth: 32)
    }
}
