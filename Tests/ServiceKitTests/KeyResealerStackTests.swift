import Crypto
import Foundation
import Platform
import Postgres
import Testing
import TestSupport

@testable import ServiceKit

/// The key resealer over a column of the stack's PostgreSQL (a scratch database): every value
/// under an accepted key sealed again under the sealing key, across batches; a value changed
/// between the read and the write left as the writer left it; values under no key counted and
/// kept; the figures published; the loop's first pass after its delay.
@Suite(.serialized, .timeLimit(.minutes(2))) struct KeyResealerStackTests {
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)
    static let stranger = [UInt8](repeating: 3, count: 32)

    static func pool() async throws -> (PostgresPool, @Sendable () async -> Void) {
        try TestStack.require()
        let (name, drop) = try await TestStack.scratchDatabase(prefix: "reseal")
        let pool = TestStack.pool(database: name)
        try await pool.withConnection { try await $0.query("CREATE TABLE sealed (id text PRIMARY KEY, value bytea)") }
        return (pool, drop)
    }

    static func binding(_ id: String) -> [UInt8] { Array("test/\(id)".utf8) }

    /// The column over table `sealed`; `meanwhile` runs after each batch is read, before any
    /// of it is written (a concurrent writer).
    static func column(keys: SealingKeys, meanwhile: @escaping @Sendable (PostgresConnection) async throws -> Void = { _ in }) -> SealedColumn {
        SealedColumn(
            name: "sealed.value", variable: "SIGNET_TEST_KEY", keys: keys,
            read: { after, limit, conn in
                let rows =
                    if let after {
                        try await conn.query("SELECT id, value FROM sealed WHERE value IS NOT NULL AND id > \(after[0]) ORDER BY id LIMIT \(limit)")
                    } else {
                        try await conn.query("SELECT id, value FROM sealed WHERE value IS NOT NULL ORDER BY id LIMIT \(limit)")
                    }
                try await meanwhile(conn)
                return rows.compactMap { row in
                    guard let id = row.string("id"), let value = row.bytes("value") else { return nil }
                    return .init(position: [id], sealed: value, associatedData: binding(id))
                }
            },
            replace: { value, resealed, conn in
                try await conn.query(
                    "UPDATE sealed SET value = \(PostgresBytes(resealed)) WHERE id = \(value.position[0]) AND value = \(PostgresBytes(value.sealed))"
                ).affectedRows == 1
            })
    }

    static func insert(_ count: Int, under key: [UInt8], from start: Int, on pool: PostgresPool) async throws -> [String: [UInt8]] {
        let keys = try SealingKeys(key: key)
        var plain: [String: [UInt8]] = [:]
        try await pool.withConnection { conn in
            for i in start..<(start + count) {
                let id = String(format: "v%04d", i), value = SecureRandom.bytes(24)
                plain[id] = value
                try await conn.query("INSERT INTO sealed (id, value) VALUES (\(id), \(PostgresBytes(try keys.seal(value, associatedData: binding(id)))))")
            }
        }
        return plain
    }

    @Test func everyValueUnderAnAcceptedKeyIsSealedAgainAcrossBatches() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { pool.close(); await drop() } }
        var plain = try await Self.insert(23, under: Self.old, from: 0, on: pool)
        plain.merge(try await Self.insert(4, under: Self.new, from: 23, on: pool)) { a, _ in a }
        _ = try await Self.insert(2, under: Self.stranger, from: 27, on: pool)
        try await pool.withConnection { try await $0.query("INSERT INTO sealed (id, value) VALUES ('v9999', NULL)") }

        #expect(KeyResealer(columns: [Self.column(keys: try SealingKeys(key: Self.new))], pool: pool, logger: TestStack.quietLogger) == nil)
        let metrics = MetricsRegistry()
        let keys = try SealingKeys(key: Self.new, accepted: [Self.old])
        let resealer = try #require(
            KeyResealer(columns: [Self.column(keys: keys)], pool: pool, logger: TestStack.quietLogger, batchSize: 5, metrics: metrics))
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 29, resealed: 23, unreadable: 2))
        let text = metrics.render()
        #expect(text.contains(#"signet_sealed_values{column="sealed.value",key="accepted"} 0"#), "\(text)")
        #expect(text.contains(#"signet_sealed_values{column="sealed.value",key="none"} 2"#), "\(text)")
        #expect(text.contains(#"signet_sealed_values_resealed_total{column="sealed.value"} 23"#), "\(text)")
        // When the figures were taken, to the second (a replica skipped by another's lock keeps
        // older ones).
        let stamp = try #require(
            text.split(separator: "\n").first { $0.hasPrefix(#"signet_sealed_values_pass_timestamp_seconds{column="sealed.value"} "#) }
                .flatMap { Double($0.split(separator: " ").last ?? "") })
        #expect(abs(stamp - Date().timeIntervalSince1970) < 600, "\(stamp)")

        // Every value opens under the new key alone, as it was; the strangers' are untouched.
        let onlyNew = try SealingKeys(key: Self.new)
        let rows = try await pool.withConnection { try await $0.query("SELECT id, value FROM sealed WHERE value IS NOT NULL ORDER BY id") }
        for row in rows {
            let id = try #require(row.string("id")), value = try #require(row.bytes("value"))
            if let expected = plain[id] {
                #expect(try onlyNew.open(value, associatedData: Self.binding(id)) == expected, "\(id)")
            } else {
                #expect(try SealingKeys(key: Self.stranger).open(value, associatedData: Self.binding(id)).count == 24, "\(id)")
            }
        }
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 29, unreadable: 2))
    }

    /// A writer that changes a value between the resealer's read and its write wins: the
    /// resealer's compare-and-set finds another value and leaves it, counting it as still to do.
    @Test func aValueChangedMeanwhileIsLeftAsTheWriterLeftIt() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { pool.close(); await drop() } }
        _ = try await Self.insert(3, under: Self.old, from: 0, on: pool)
        let written = try SealingKeys(key: Self.new).seal([9, 9, 9], associatedData: Self.binding("v0001"))
        let wrote = PlainLock(false)
        let column = Self.column(keys: try SealingKeys(key: Self.new, accepted: [Self.old])) { conn in
            guard !wrote.withLock({ let was = $0; $0 = true; return was }) else { return }
            try await conn.query("UPDATE sealed SET value = \(PostgresBytes(written)) WHERE id = 'v0001'")
        }
        let resealer = try #require(KeyResealer(columns: [column], pool: pool, logger: TestStack.quietLogger))
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 3, resealed: 2, underAccepted: 1))
        let now = try await pool.withConnection { try await $0.query("SELECT value FROM sealed WHERE id = 'v0001'") }.first?.bytes("value")
        #expect(now == written)
        // The next pass finds it under the new key.
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 3))
    }

    /// One replica passes at a time: while another holds the lock, a pass does nothing.
    @Test func aReplicaSkipsItsPassWhileAnotherIsPassing() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { pool.close(); await drop() } }
        _ = try await Self.insert(2, under: Self.old, from: 0, on: pool)
        let resealer = try #require(
            KeyResealer(columns: [Self.column(keys: try SealingKeys(key: Self.new, accepted: [Self.old]))], pool: pool, logger: TestStack.quietLogger))
        // Another session of the same database (the resealer's pass takes a connection of its own).
        try await pool.withConnection { conn in
            #expect(try await conn.query("SELECT pg_try_advisory_lock(\(KeyResealer.lockKey)) AS locked").first?.bool("locked") == true)
            #expect(try await resealer.pass().isEmpty)
            try await conn.query("SELECT pg_advisory_unlock(\(KeyResealer.lockKey))")
        }
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 2, resealed: 2))
        // The lock was given back: the next pass runs too.
        #expect(try await resealer.pass()["sealed.value"] == KeyResealer.Outcome(scanned: 2))
    }

    @Test func theLoopPassesAfterItsFirstDelayAndStopsAtShutdown() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { pool.close(); await drop() } }
        _ = try await Self.insert(2, under: Self.old, from: 0, on: pool)
        let resealer = try #require(
            KeyResealer(
                columns: [Self.column(keys: try SealingKeys(key: Self.new, accepted: [Self.old]))], pool: pool, logger: TestStack.quietLogger,
                interval: .seconds(3600), firstDelay: .milliseconds(50)))
        let running = Task { try await resealer.run() }
        let onlyNew = try SealingKeys(key: Self.new)
        var resealed = false
        for _ in 0..<100 where !resealed {
            try await Task.sleep(for: .milliseconds(50))
            let values = try await pool.withConnection { try await $0.query("SELECT id, value FROM sealed") }
            resealed = values.allSatisfy { row in
                guard let id = row.string("id"), let value = row.bytes("value") else { return false }
                return (try? onlyNew.open(value, associatedData: Self.binding(id))) != nil
            }
        }
        #expect(resealed)
        await resealer.shutdown()
        try await running.value
    }
}
