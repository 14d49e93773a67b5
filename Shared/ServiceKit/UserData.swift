import Crypto
import FoundationEssentials
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
    /// The user's subject reference (``SubjectKey/ref(tenant:username:)``): what the rows a
    /// service built from other services' events are keyed by (events never carry usernames).
    public var subjectRef: String

    public init(tenant: String, username: String, subject: String?, subjectRef: String) {
        self.tenant = tenant
        self.username = username
        self.subject = subject
        self.subjectRef = subjectRef
    }

    /// The user, with the subject reference computed under `key`.
    public init(tenant: String, username: String, subject: String?, key: SubjectKey) {
        self.init(tenant: tenant, username: username, subject: subject, subjectRef: key.ref(tenant: tenant, username: username))
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
    ///
    /// The request names the user by subject reference only (no username in the event log);
    /// the rows a service keeps from its own API are keyed by username, which `usernames`
    /// finds for the erasure in progress (the registration service keeps it until the
    /// erasure completes). The username found must give the event's subject reference under
    /// `subjectKey`, or the event is dead-lettered.
    public static func handlers(service: ServiceName, store: some UserDataStore, subjectKey: SubjectKey, usernames: ErasureUsernames) -> EventHandlers {
        var h = EventHandlers()
        h.on(UserPurgeRequested.self) { e, _, conn in
            var username = ""
            if usernames.isNeeded {
                guard let found = try await usernames.lookup(e.tenantId, e.erasureId, conn) else {
                    // Not an erasure in progress here (completed ones forget the username).
                    throw EventDecodingError.invalidData("erasureId")
                }
                guard ConstantTime.equals(subjectKey.ref(tenant: e.tenantId, username: found), e.subjectRef) else {
                    throw EventDecodingError.invalidData("subjectRef")
                }
                username = found
            }
            let user = UserDataSubject(tenant: e.tenantId, username: username, subject: e.subject, subjectRef: e.subjectRef)
            let tallies = try await store.erase(user, on: conn).filter { $0.value > 0 }
            // The purge request itself stays until the erasure completes: were the cluster
            // replaced before every service had read it, the relay must be able to send it again.
            try await scrubOutbox(tenant: e.tenantId, subjectRef: e.subjectRef, username: usernames.isNeeded ? username : nil, keepingPurgeRequests: true, on: conn)
            try await Outbox.enqueue(
                ErasurePartCompleted(tenantId: e.tenantId, erasureId: e.erasureId, service: service.rawValue, tallies: tallies, completedAt: Date()),
                source: service, subject: e.tenantId, key: e.tenantId, on: conn)
        }
        return h
    }

    /// Deletes the outbox rows whose event names the user (`tenantId` and `subjectRef` members
    /// of the payload, or `username` in rows written before events carried subject
    /// references), so that no table keeps the user's events once the purge is done; with
    /// `keepingPurgeRequests`, ``UserPurgeRequested`` rows stay (the registration service drops
    /// them when the erasure completes), but for those of `erasureID`'s when it is given: the
    /// completing erasure drops its own request, never another erasure's of the same user still
    /// waiting to be sent (a repeated DELETE), which would then never be published.
    ///
    /// Both tables: the outbox (unsent rows) and `outbox_sent` (a day of sent ones). `conn`
    /// must be inside the caller's transaction.
    ///
    /// - Important: reads every such row's JSON: fine for erasures, which are rare; not for a
    ///   hot path.
    /// - Returns: how many rows went.
    @discardableResult
    public static func scrubOutbox(
        tenant: String, subjectRef: String, username: String?, keepingPurgeRequests: Bool = false, exceptThoseOf erasureID: String? = nil,
        on conn: PostgresConnection
    ) async throws -> Int {
        let kept = keepingPurgeRequests ? UserPurgeRequested.eventType : ""
        // A purge request is deleted when purge requests are not kept, or when it is the named
        // erasure's own ("" names none).
        let own = erasureID ?? ""
        // The relay moves rows between the two tables (on a cluster change, back again): a
        // move committed between the two statements below could carry a row past both. Its
        // turn's lock, held until this transaction ends, keeps the relay out meanwhile (it
        // skips a turn; erasures are rare).
        try await conn.query("SELECT pg_advisory_xact_lock(\(OutboxRelay.lockKey))")
        let unsent = try await conn.query(
            """
            DELETE FROM outbox WHERE (event_type <> \(kept) OR data::jsonb ->> 'erasureId' = \(own)) AND data::jsonb ->> 'tenantId' = \(tenant)
                AND (data::jsonb ->> 'subjectRef' = \(subjectRef) OR data::jsonb ->> 'username' = \(username))
            """
        ).affectedRows
        let sent = try await conn.query(
            """
            DELETE FROM outbox_sent WHERE (event_type <> \(kept) OR data::jsonb ->> 'erasureId' = \(own)) AND data::jsonb ->> 'tenantId' = \(tenant)
                AND (data::jsonb ->> 'subjectRef' = \(subjectRef) OR data::jsonb ->> 'username' = \(username))
            """
        ).affectedRows
        return unsent + sent
    }

    /// `POST /v1/internal/tenants/{tenant}/user-data` `{"username","subject"?}`: the service's
    /// part of the user's data, to the registration service (internal token).
    public static func registerExport(on router: inout GuardedRouter, context: ServiceContext, store: some UserDataStore) {
        let calls = context.configuration.internalCalls
        router.post("/v1/internal/tenants/{tenant}/user-data", calls.guardInternal) { request, ctx in
            guard case .service(let caller) = ctx.principal else { throw HTTPError(.unauthorized) }
            let body = try request.decode(UserDataRequest.self)
            try UsernameRules.require(body.username)
            if let s = body.subject, !(1...64).contains(s.utf8.count) || Base64URL.decode(s) == nil {
                throw HTTPError.invalid("subject", "subject is a base64url user handle.")
            }
            let user = UserDataSubject(
                tenant: ctx.parameter("tenant"), username: body.username, subject: body.subject, key: context.configuration.subjectKey)
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

/// How a service finds the username of an erasure in progress: ``UserPurgeRequested`` names the
/// user by subject reference only, and the registration service keeps the username with the
/// erasure until every service has answered (then forgets it).
public struct ErasureUsernames: Sendable {
    public typealias Lookup = @Sendable (_ tenant: String, _ erasureID: String, _ conn: PostgresConnection) async throws -> String?
    let isNeeded: Bool
    let lookup: Lookup

    /// A service whose rows are keyed by subject (the pii service): no username is looked up,
    /// and the store gets an empty one.
    public static let unneeded = ErasureUsernames(isNeeded: false) { _, _, _ in nil }

    /// The registration service itself: `lookup` reads its own erasure.
    public static func local(_ lookup: @escaping Lookup) -> ErasureUsernames { ErasureUsernames(isNeeded: true, lookup: lookup) }

    /// Asks the registration service (`GET /v1/internal/tenants/{tenant}/erasures/{id}/username`,
    /// internal token). A registration service that cannot be reached delays the erasure (the
    /// consumer retries the event until it answers); one that knows no such erasure in
    /// progress answers 404, and the event is dead-lettered.
    /// ``registration(url:calls:)`` with the service's configured registration URL and
    /// internal token: what every service other than registration and pii uses.
    public static func registration(context: ServiceContext) -> ErasureUsernames {
        registration(url: context.configuration.registrationURL, calls: context.configuration.internalCalls)
    }

    public static func registration(url: String, calls: InternalCalls) -> ErasureUsernames {
        ErasureUsernames(isNeeded: true) { tenant, erasureID, _ in
            guard TenantValidation.isValidTenantID(tenant), ErasureIDs.isValid(erasureID) else { return nil }
            do {
                return try await calls.get("\(url)/v1/internal/tenants/\(tenant)/erasures/\(erasureID)/username", as: ErasureUsername.self).username
            } catch let error as HTTPError where error.code.status == 404 {
                return nil
            } catch {
                throw EventDependencyUnavailable(dependency: "registration")
            }
        }
    }
}
