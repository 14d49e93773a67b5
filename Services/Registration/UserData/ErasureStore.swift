import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// Erasures of users' data, the registration service's side of the purge saga.
///
/// 1. ``start(tenant:username:at:)``: the erasure (`PENDING`) and ``UserPurgeRequested`` commit
///    together.
/// 2. Every service, this one included, consumes the request, erases its part in its consumer's
///    transaction (``UserErasure``) and answers ``ErasurePartCompleted``. A service that is down
///    answers when it is back: the request waits in Kafka at its group's committed offset.
/// 3. ``handlers`` record each answer once; the one that makes five completes the erasure: the
///    receipt is signed, the outbox loses the events that named the user, and the username is
///    cleared from the erasure.
struct ErasureStore: Sendable {
    let context: ServiceContext
    let receipts: ErasureReceipts

    /// Starts erasing the user's data across the services. An unknown user is erased too
    /// (every part answers with nothing): the answer does not tell whether the user existed.
    ///
    /// - Returns: the erasure id.
    func start(tenant: String, username: String, at now: Date) async throws -> String {
        let id = "er_" + Hex.encode(SecureRandom.bytes(16))
        try await context.withTransaction { conn in
            // After every write for the user that began before it, before every one after.
            try await Self.lockUser(tenant: tenant, username: username, on: conn)
            let handle = try await UserStore.handle(tenant: tenant, username: username, on: conn)
            try await conn.query(
                """
                INSERT INTO erasures (id, tenant_id, username, status, requested_at) VALUES (\(id), \(tenant), \(username), 'PENDING', \(now))
                """)
            try await Outbox.enqueue(
                UserPurgeRequested(
                    tenantId: tenant, erasureId: id, subjectRef: context.configuration.subjectKey.ref(tenant: tenant, username: username),
                    subject: handle.map(Base64URL.encode), requestedAt: now),
                source: .registration, subject: tenant, key: tenant, on: conn)
        }
        return id
    }

    /// Refuses, in the caller's transaction, a write that adds to the user's data (a user, a
    /// credential, a UAF key, a method or its confirmation) while an erasure of the user is in
    /// progress. Each service erases its part when the request reaches it: a credential or
    /// method added meanwhile was erased here but not in a service that had already done its
    /// part (or the reverse), leaving a half-deleted user, and a user created after this
    /// service's part outlived the erasure. Once it has completed, the username is free again
    /// (a new user).
    ///
    /// The user's lock (transaction-scoped, also taken by ``start(tenant:username:at:)``) orders
    /// the two: a write that committed first is erased; one after sees the erasure.
    ///
    /// - Throws: 409 `user_erasure_pending`.
    static func requireNoErasureInProgress(tenant: String, username: String, on conn: PostgresConnection) async throws {
        guard try await lockUserUnlessErasing(tenant: tenant, username: username, on: conn) else {
            throw HTTPError(.userErasurePending, detail: "This user's data is being erased; try again once the erasure has completed.")
        }
    }

    /// Takes the user's lock, as ``requireNoErasureInProgress(tenant:username:on:)`` does, for a
    /// write that leaves a user being erased alone instead of refusing: false when an erasure
    /// of the user is in progress.
    static func lockUserUnlessErasing(tenant: String, username: String, on conn: PostgresConnection) async throws -> Bool {
        try await lockUser(tenant: tenant, username: username, on: conn)
        let pending = try await conn.query(
            "SELECT 1 AS pending FROM erasures WHERE tenant_id = \(tenant) AND username = \(username) AND status = 'PENDING' LIMIT 1")
        return pending.first == nil
    }

    /// The user's advisory lock for the rest of the transaction (class 7301, its own key space).
    static func lockUser(tenant: String, username: String, on conn: PostgresConnection) async throws {
        try await conn.query("SELECT pg_advisory_xact_lock(7301, hashtext(\(tenant)::text || '/' || \(username)::text)) AS locked")
    }

    /// The erasure `id` of `tenant`, or nil.
    func find(id: String, tenant: String) async throws -> ErasureResource? {
        guard ErasureIDs.isValid(id) else { return nil }
        return try await context.pool.withConnection { conn -> ErasureResource? in
            guard let row = try await conn.query(
                "SELECT status, requested_at, completed_at, receipt FROM erasures WHERE id = \(id) AND tenant_id = \(tenant)"
            ).first, let status = row.string("status"), let requested = row.date("requested_at")
            else { return nil }
            let done = try await Self.parts(of: id, on: conn)
            let parts = ServiceName.allCases.map { service in
                done[service.rawValue].map { ErasurePart(service: service.rawValue, status: "COMPLETED", tallies: $0.tallies, completedAt: $0.at) }
                    ?? ErasurePart(service: service.rawValue, status: "PENDING", tallies: nil, completedAt: nil)
            }
            return ErasureResource(
                erasureId: id, tenantId: tenant, status: status, requestedAt: requested, completedAt: row.date("completed_at"), parts: parts,
                receipt: row.string("receipt"))
        }
    }

    /// The parts recorded for erasure `id`, by service.
    static func parts(of id: String, on conn: PostgresConnection) async throws -> [String: (tallies: [String: Int], at: Date)] {
        var parts: [String: (tallies: [String: Int], at: Date)] = [:]
        for row in try await conn.query("SELECT service, tallies, completed_at FROM erasure_parts WHERE erasure_id = \(id)") {
            guard let service = row.string("service"), let text = row.string("tallies"), let at = row.date("completed_at") else { continue }
            parts[service] = (try JSONValueDecoder().decode([String: Int].self, from: Array(text.utf8)), at)
        }
        return parts
    }

    /// The username of erasure `id` while it is in progress (this service's own part of the
    /// purge, and the internal route other services ask); nil once it completed (the username
    /// is cleared then) or for an unknown id.
    static func username(erasure id: String, tenant: String, on conn: PostgresConnection) async throws -> String? {
        guard ErasureIDs.isValid(id) else { return nil }
        return try await conn.query(
            "SELECT username FROM erasures WHERE id = \(id) AND tenant_id = \(tenant) AND status = 'PENDING'"
        ).first?.string("username")
    }

    /// Records services' answers; completes an erasure at its fifth.
    static func handlers(receipts: ErasureReceipts, subjectKey: SubjectKey) -> EventHandlers {
        var h = EventHandlers()
        h.on(ErasurePartCompleted.self) { e, _, conn in
            // The erasure's row lock orders the answers: exactly one of them completes it.
            guard let row = try await conn.query(
                "SELECT status, username, requested_at FROM erasures WHERE id = \(e.erasureId) AND tenant_id = \(e.tenantId) FOR UPDATE"
            ).first, let requested = row.date("requested_at")
            else { return }  // not an erasure of this deployment's: nothing to record
            let tallies = String(decoding: try JSONValueEncoder().encodeToBytes(e.tallies), as: UTF8.self)
            try await conn.query(
                """
                INSERT INTO erasure_parts (erasure_id, service, tallies, completed_at) VALUES (\(e.erasureId), \(e.service), \(tallies), \(e.completedAt))
                ON CONFLICT (erasure_id, service) DO NOTHING
                """)
            guard row.string("status") == "PENDING" else { return }
            let parts = try await parts(of: e.erasureId, on: conn)
            guard ServiceName.allCases.allSatisfy({ parts[$0.rawValue] != nil }) else { return }
            let now = Date()
            let receipt = try receipts.sign(
                erasureID: e.erasureId, tenant: e.tenantId, requestedAt: requested, completedAt: now, tallies: parts.mapValues(\.tallies))
            // Every service has consumed the request by now: this service's copy of it, and of any
            // other event naming the user, can go.
            if let username = row.string("username") {
                try await UserErasure.scrubOutbox(
                    tenant: e.tenantId, subjectRef: subjectKey.ref(tenant: e.tenantId, username: username), username: username,
                    keepingPurgeRequests: true, exceptThoseOf: e.erasureId, on: conn)
            }
            try await conn.query(
                """
                UPDATE erasures SET status = 'COMPLETED', completed_at = \(now), receipt = \(receipt), username = NULL
                WHERE id = \(e.erasureId)
                """)
        }
        return h
    }
}
