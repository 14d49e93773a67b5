import Foundation
import Platform
import Testing
import TestSupport
@testable import Postgres

@Suite(.enabled(if: TestStack.enabled), .serialized)
struct PostgresPoolTests {
    @Test func boundParametersRoundTripWithoutInjection() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        let evil = "x'); DROP TABLE t; --"
        let bytes: [UInt8] = [0, 1, 0x5C, 0x27, 0xff]
        let date = Date(timeIntervalSince1970: 1_764_000_000.123)
        let row = try await pool.withConnection { conn in
            try await conn.execute("CREATE TABLE t (s text, b bytea, a text[], d timestamptz, n integer, f boolean)")
            try await conn.query(
                "INSERT INTO t VALUES (\(evil), \(PostgresBytes(bytes)), \(PostgresArray(["a,b", "c\"d", "e\\f"])), \(date), \(Optional<Int>.none), \(true))")
            return try await conn.query("SELECT s, b, array_to_json(a)::text AS a, d, n, f FROM t").first
        }
        let r = try #require(row)
        #expect(r.string("s") == evil)
        #expect(r.bytes("b") == bytes)
        #expect(r.string("a") == #"["a,b","c\"d","e\\f"]"#)
        #expect(abs((r.date("d") ?? .distantPast).timeIntervalSince(date)) < 0.001)
        #expect(r.string("n") == nil)
        #expect(r.bool("f") == true)
    }

    /// A NUL character would cut the C string short, so that a shorter value is stored or
    /// matched: refused before anything is sent, and the connection stays usable.
    @Test func textWithANULCharacterIsRefusedNotCutShort() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        try await pool.withConnection { conn in
            try await conn.execute("CREATE TABLE t (s text)")
            do {
                try await conn.query("INSERT INTO t VALUES (\("alice\u{0}mallory"))")
                Issue.record("a NUL in a bound value was sent")
            } catch let error as PostgresError {
                #expect(error.code == .textContainsNUL)
            }
            try await conn.query("INSERT INTO t VALUES (\("alice"))")
            let values = try await conn.query("SELECT s FROM t").compactMap { $0.string("s") }
            #expect(values == ["alice"])
        }
    }

    @Test func transactionsRollBackOnThrow() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE t (v integer)") }
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await pool.withTransaction { conn in
                try await conn.query("INSERT INTO t VALUES (\(1))")
                throw Boom()
            }
        }
        try await pool.withTransaction { try await $0.query("INSERT INTO t VALUES (\(2))") }
        let values = try await pool.withConnection { try await $0.query("SELECT v FROM t") }.compactMap { $0.int("v") }
        #expect(values == [2])
    }

    @Test func serverErrorsCarrySQLStateButNoValuesInDescription() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE u (k text PRIMARY KEY)") }
        try await pool.withConnection { try await $0.query("INSERT INTO u VALUES (\("secret-value"))") }
        do {
            try await pool.withConnection { try await $0.query("INSERT INTO u VALUES (\("secret-value"))") }
            Issue.record("expected a unique violation")
        } catch let e as PostgresError {
            #expect(e.isUniqueViolation)
            #expect(!e.description.contains("secret-value"))
        }
    }

    @Test func reconnectsAfterTheServerDropsTheConnection() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        let pid = try await pool.withConnection { try await $0.query("SELECT pg_backend_pid() AS pid").first?.int("pid") }
        // What a server restart does to a pooled connection: the server side goes away.
        let admin = TestStack.pool(database: "postgres", size: 1)
        try await admin.withConnection { try await $0.query("SELECT pg_terminate_backend(\(try #require(pid)))") }
        admin.close()
        try await Task.sleep(for: .milliseconds(100))
        // A transaction's BEGIN on the dead connection fails; the pool reconnects and retries.
        let newPID = try await pool.withTransaction { try await $0.query("SELECT pg_backend_pid() AS pid").first?.int("pid") }
        #expect(newPID != nil && newPID != pid)
        // And plain queries work again too.
        try await pool.ping()
    }

    @Test func statementsArePreparedOncePerConnectionAndSurviveSchemaChanges() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        try await pool.withConnection { try await $0.execute("CREATE TABLE t (a int); INSERT INTO t VALUES (1)") }
        for _ in 0..<3 {
            let rows = try await pool.withConnection { try await $0.query("SELECT * FROM t WHERE a = \(1)") }
            #expect(rows.first?.int("a") == 1)
        }
        let statements = try await pool.withConnection {
            try await $0.query("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = 'SELECT * FROM t WHERE a = $1'")
        }
        #expect(statements.first?.int("n") == 1, "one server-side statement, reused")

        // A column added under the prepared statement: at most one call reports the changed
        // result type, and the next one prepares afresh and sees the new column.
        try await pool.withConnection { try await $0.execute("ALTER TABLE t ADD COLUMN b int DEFAULT 2") }
        do {
            _ = try await pool.withConnection { try await $0.query("SELECT * FROM t WHERE a = \(1)") }
        } catch let e as PostgresError {
            #expect(e.sqlState == "0A000")
        }
        let after = try await pool.withConnection { try await $0.query("SELECT * FROM t WHERE a = \(1)") }
        #expect(after.first?.int("b") == 2)

        // A statement first seen inside an aborted transaction is not recorded as prepared.
        await #expect(throws: PostgresError.self) {
            try await pool.withTransaction { conn in
                _ = try? await conn.query("SELECT 1 / \(0) AS x")
                _ = try await conn.query("SELECT a + \(1) AS y FROM t")
            }
        }
        let y = try await pool.withConnection { try await $0.query("SELECT a + \(1) AS y FROM t") }
        #expect(y.first?.int("y") == 2)
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let migrations = [
            Migration(1, "counter", "CREATE TABLE applied (n integer); INSERT INTO applied VALUES (1)"),
            Migration(2, "counter again", "INSERT INTO applied VALUES (2)"),
        ]
        // N replicas starting at once.
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<6 {
                group.addTask {
                    let pool = TestStack.pool(database: scratch.name, size: 1)
                    defer { pool.close() }
                    return try await Migrator.migrate(pool: pool, migrations: migrations, logger: TestStack.quietLogger)
                }
            }
            var all: [Int] = []
            for try await a in group { all += a }
            return all
        }
        #expect(applied.sorted() == [1, 2])
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        let rows = try await pool.withConnection { try await $0.query("SELECT n FROM applied ORDER BY n") }
        #expect(rows.compactMap { $0.int("n") } == [1, 2])
    }

    @Test func changedMigrationHistoryIsRefused() async throws {
        try TestStack.require()
        let scratch = try await TestStack.scratchDatabase(prefix: "pgtest")
        defer { Task { await scratch.drop() } }
        let pool = TestStack.pool(database: scratch.name)
        defer { pool.close() }
        try await Migrator.migrate(pool: pool, migrations: [Migration(1, "a", "SELECT 1")], logger: TestStack.quietLogger)
        await #expect(throws: Migrator.MigrationError.self) {
            try await Migrator.migrate(pool: pool, migrations: [Migration(1, "b", "SELECT 1")], logger: TestStack.quietLogger)
        }
        await #expect(throws: Migrator.MigrationError.self) {
            try await Migrator.migrate(pool: pool, migrations: [Migration(2, "x", "SELECT 1"), Migration(1, "a", "SELECT 1")], logger: TestStack.quietLogger)
        }
    }
}
