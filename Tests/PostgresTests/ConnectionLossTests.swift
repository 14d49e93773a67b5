import Foundation
import HTTPServer
import Platform
import ServiceKit
import Testing
import TestSupport
@testable import Postgres

/// What a PostgreSQL restart does to the pool, reproduced by terminating backends (as the
/// superuser, only the scratch database's): an idle connection found dead is replaced before
/// use; a transaction that lost its connection before COMMIT runs again once on a fresh
/// one; a statement that may have taken effect is not repeated; and whatever is not retried
/// answers 503 `database_unavailable` with `Retry-After`, never 500.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct ConnectionLossTests {
    /// The superuser's pool on the maintenance database.
    static func superuser() -> PostgresPool {
        PostgresPool(
            configuration: PostgresConfiguration(conninfo: "postgresql://postgres@127.0.0.1:\(TestStack.pgPort)/postgres?connect_timeout=5", poolSize: 1),
            logger: TestStack.quietLogger)
    }

    /// Terminates `pid`, or every `signet` backend of `database`, and waits until they are gone.
    static func terminate(database: String, pid: Int? = nil) async throws {
        let admin = superuser()
        defer { admin.close() }
        try await admin.withConnection { conn in
            if let pid {
                try await conn.query("SELECT pg_terminate_backend(\(pid))")
            } else {
                try await conn.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'signet' AND datname = \(database) AND pid <> pg_backend_pid()")
            }
        }
        let gone = try await TestStack.eventually(timeout: .seconds(10)) {
            let rows = try await admin.withConnection { conn in
                if let pid {
                    return try await conn.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = \(pid)")
                }
                return try await conn.query("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = 'signet' AND datname = \(database)")
            }
            return rows.first?.int("n") == 0
        }
        #expect(gone, "backends still there")
    }

    static func backendPID(_ conn: PostgresConnection) async throws -> Int {
        try #require(try await conn.query("SELECT pg_backend_pid() AS pid").first?.int("pid"))
    }

    @Test func idleConnectionsTheServerEndedAreReplacedBeforeUse() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 2)
        defer { pool.close() }
        // Two pooled connections, both idle.
        async let a = pool.withConnection { conn in
            try await Task.sleep(for: .milliseconds(50))
            return try await Self.backendPID(conn)
        }
        async let b = pool.withConnection { conn in
            try await Task.sleep(for: .milliseconds(50))
            return try await Self.backendPID(conn)
        }
        let before = Set([try await a, try await b])
        try await Self.terminate(database: scratch.name)
        // A backend leaves pg_stat_activity before its process exits and its socket closes:
        // give the closes a moment to arrive (the pool replaces only what it can see is dead;
        // a connection that dies while in use is a 503, tested below).
        try await Task.sleep(for: .milliseconds(300))
        // Plain statements (no transaction, nothing retried) on the pool's dead connections.
        for _ in 0..<3 {
            let pid = try await pool.withConnection { try await Self.backendPID($0) }
            #expect(!before.contains(pid))
        }
    }

    @Test func aTransactionThatLostItsConnectionRunsAgainOnceOnAFreshOne() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE t (attempt int, v int)") }
        let attempts = PlainLock(0)
        let pids = PlainLock<[Int]>([])
        try await pool.withTransaction { conn in
            let attempt = attempts.withLock { $0 += 1; return $0 }
            let pid = try await Self.backendPID(conn)
            pids.withLock { $0.append(pid) }
            try await conn.query("INSERT INTO t VALUES (\(attempt), \(1))")
            // Mid-transaction, the server ends the session (as a restart does).
            if attempt == 1 { try await Self.terminate(database: scratch.name, pid: pid) }
            try await conn.query("INSERT INTO t VALUES (\(attempt), \(2))")
        }
        #expect(attempts.withLock { $0 } == 2)
        #expect(Set(pids.withLock { $0 }).count == 2, "the second attempt ran on a fresh connection")
        let rows = try await pool.withConnection { try await $0.query("SELECT attempt, v FROM t ORDER BY v") }
        // The first attempt never committed: only the second one's rows are there.
        #expect(rows.map { [$0.int("attempt"), $0.int("v")] } == [[2, 1], [2, 2]])
    }

    @Test func aTransactionIsRetriedOnceOnly() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        let attempts = PlainLock(0)
        do {
            try await pool.withTransaction { conn in
                attempts.withLock { $0 += 1 }
                try await Self.terminate(database: scratch.name, pid: try await Self.backendPID(conn))
                try await conn.query("SELECT 1")
            }
            Issue.record("expected the connection loss to surface")
        } catch let error as PostgresError {
            #expect(error.isConnectionError)
        }
        #expect(attempts.withLock { $0 } == 2)
    }

    @Test func aStatementThatMayHaveRunIsNotRepeatedAndAnswers503() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE t (v int)") }
        var router = Router()
        // A handler writing outside a transaction: its first statement commits on its own,
        // then the connection is lost. Nothing may be repeated; the client is told to retry.
        router.post("/write") { _, _ in
            try await pool.withConnection { conn in
                try await conn.query("INSERT INTO t VALUES (\(1))")
                try await Self.terminate(database: scratch.name, pid: try await Self.backendPID(conn))
                try await conn.query("INSERT INTO t VALUES (\(2))")
            }
            return HTTPResponse(status: 201)
        }
        let client = HTTPTestClient(HTTPApplication(router: router, logger: TestStack.quietLogger))
        let response = await client.execute("POST", "/write")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "1")
        #expect(response.header("Content-Type") == "application/problem+json")
        let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(body?["code"] as? String == "database_unavailable")
        #expect(!String(decoding: response.body, as: UTF8.self).contains("INSERT"))
        let rows = try await pool.withConnection { try await $0.query("SELECT v FROM t") }
        #expect(rows.compactMap { $0.int("v") } == [1])
    }

    @Test func anUnreachableServerAnswers503() async throws {
        try TestStack.require()
        // Nothing listens on port 1: every connect fails at once.
        let pool = PostgresPool(
            configuration: PostgresConfiguration(conninfo: "postgresql://signet@127.0.0.1:1/none?connect_timeout=2", poolSize: 1),
            logger: TestStack.quietLogger)
        defer { pool.close() }
        var router = Router()
        router.get("/read") { _, _ in
            try await pool.withTransaction { try await $0.query("SELECT 1") }
            return HTTPResponse(status: 200)
        }
        let response = await HTTPTestClient(HTTPApplication(router: router, logger: TestStack.quietLogger)).execute("GET", "/read")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "1")
        let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(body?["code"] as? String == "database_unavailable")
    }
}
