import Foundation
import Platform
import Testing
import TestSupport
@testable import Postgres

/// Statements issued from a task on an ``EventLoop`` (as HTTP handlers in loop mode): libpq's
/// non-blocking API on the loop, with the pool's rules unchanged.
@Suite(.enabled(if: TestStack.enabled), .serialized)
struct PostgresOnEventLoopTests {
    /// Runs `body` in a task that prefers `loop` (as a handler in loop mode).
    func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task(executorPreference: loop) { try await body() }.value
    }

    @Test func queriesTransactionsAndErrorsOnTheLoop() async throws {
        try TestStack.require()
        #expect(PostgresConnection.nonBlockingOnLoops)
        let scratch = try await TestStack.scratchDatabase(prefix: "pgloop")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 2)
        defer { pool.close() }
        let loop = EventLoop(name: "pg-test-loop")
        defer { loop.stop() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE t (k text PRIMARY KEY, n integer)") }
        let results = try await onLoop(loop) { () -> [Int] in
            var seen: [Int] = []
            for i in 0..<5 {  // the same statement again: prepared once, then reused
                try await pool.withTransaction { conn in
                    try await conn.query("INSERT INTO t VALUES (\("k\(i)"), \(i))")
                }
                let row = try await pool.withConnection { try await $0.query("SELECT n FROM t WHERE k = \("k\(i)")").first }
                seen.append(row?.int("n") ?? -1)
                #expect(loop.isCurrent)
            }
            return seen
        }
        #expect(results == [0, 1, 2, 3, 4])
        // A server error keeps its SQLSTATE; the transaction rolls back; the connection is reusable.
        let duplicate = await #expect(throws: PostgresError.self) {
            try await onLoop(loop) {
                try await pool.withTransaction { conn in
                    try await conn.query("INSERT INTO t VALUES (\("new"), \(9))")
                    try await conn.query("INSERT INTO t VALUES (\("k0"), \(9))")
                }
            }
        }
        #expect(duplicate?.isUniqueViolation == true)
        let count = try await onLoop(loop) { try await pool.withConnection { try await $0.query("SELECT count(*) AS c FROM t").first?.int("c") } }
        #expect(count == 5)
        let nul = await #expect(throws: PostgresError.self) {
            try await onLoop(loop) { try await pool.withConnection { try await $0.query("SELECT \("a\u{0}b")::text") } }
        }
        #expect(nul?.code == .textContainsNUL)
    }

    /// A statement larger than the socket buffer: libpq's flush returns "more" and the loop
    /// waits for the socket to be writable.
    @Test func aLargeStatementIsFlushedInParts() async throws {
        try TestStack.require()
        let pool = TestStack.pool(database: "postgres", size: 1)
        defer { pool.close() }
        let loop = EventLoop(name: "pg-test-loop")
        defer { loop.stop() }
        let big = String(repeating: "abcdefgh", count: 1 << 20)  // 8 MiB
        let length = try await onLoop(loop) {
            try await pool.withConnection { try await $0.query("SELECT length(\(big)) AS n").first?.int("n") }
        }
        #expect(length == big.utf8.count)
    }

    /// Cancelling the task (a request's deadline) abandons the statement (a 30 s sleep would
    /// otherwise succeed): the connection is closed, the error says so, and the pool
    /// reconnects for the next lease.
    @Test func aCancelledStatementClosesItsConnection() async throws {
        try TestStack.require()
        let pool = TestStack.pool(database: "postgres", size: 1)
        defer { pool.close() }
        let loop = EventLoop(name: "pg-test-loop")
        defer { loop.stop() }
        let sleeper = Task(executorPreference: loop) {
            try await pool.withConnection { try await $0.query("SELECT pg_sleep(30)") }
        }
        try await Task.sleep(for: .milliseconds(200))
        sleeper.cancel()
        let error = await #expect(throws: PostgresError.self) { try await sleeper.value }
        #expect(error?.code == .queryCancelled)
        let one = try await onLoop(loop) { try await pool.withConnection { try await $0.query("SELECT 1 AS one").first?.int("one") } }
        #expect(one == 1)
    }
}
