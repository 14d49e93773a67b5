import Crypto
import FoundationEssentials
import Platform
import Postgres

/// A column of long-lived sealed values (TOTP secrets, push tokens, per-tenant signing keys,
/// the pii vault's data keys), as ``KeyResealer`` walks it: in key order, a batch at a time,
/// each value with the associated data it was sealed with.
public struct SealedColumn: Sendable {
    public struct Value: Sendable {
        /// The row's key, in the order the column is walked (also where the next batch starts).
        public let position: [String]
        public let sealed: [UInt8]
        public let associatedData: [UInt8]

        public init(position: [String], sealed: [UInt8], associatedData: [UInt8]) {
            self.position = position
            self.sealed = sealed
            self.associatedData = associatedData
        }
    }

    /// `table.column`, for logs and metrics.
    public let name: String
    /// The variable of the key (`SIGNET_METHOD_SECRET_KEY`), for logs.
    public let variable: String
    public let keys: SealingKeys
    /// Up to `limit` values after `position` (nil: from the first), in key order.
    let read: @Sendable (_ after: [String]?, _ limit: Int, _ conn: PostgresConnection) async throws -> [Value]
    /// Writes `resealed` in place of the value if the row still holds exactly `value.sealed`
    /// (a row changed or emptied meanwhile — a new push token, an erasure — is left as it is);
    /// returns whether it did.
    let replace: @Sendable (_ value: Value, _ resealed: [UInt8], _ conn: PostgresConnection) async throws -> Bool

    public init(
        name: String, variable: String, keys: SealingKeys,
        read: @escaping @Sendable (_ after: [String]?, _ limit: Int, _ conn: PostgresConnection) async throws -> [Value],
        replace: @escaping @Sendable (_ value: Value, _ resealed: [UInt8], _ conn: PostgresConnection) async throws -> Bool
    ) {
        self.name = name
        self.variable = variable
        self.keys = keys
        self.read = read
        self.replace = replace
    }
}

extension SealedColumn {
    /// The column `column` of `table`, walked by `key` (the table's primary key, its columns in
    /// order), rows where it is not NULL; `binding` gives a row's associated data from the
    /// columns `key` and `also` name (nil: the row is passed over). The names are constants of
    /// a service's migrations, never outside input.
    ///
    /// With `replaced`, each value is replaced in a transaction of its own, which `replaced`
    /// joins: it gets the row's `returning` columns as they are after the update and the value
    /// sealed again (to publish what others keep of it, with the change).
    public static func inTable(
        _ table: StaticString, key: [StaticString], column: StaticString, also: [StaticString] = [], variable: String, keys: SealingKeys,
        returning: [StaticString] = [],
        replaced: (@Sendable (_ row: PostgresRow, _ resealed: [UInt8], _ conn: PostgresConnection) async throws -> Void)? = nil,
        binding: @escaping @Sendable (PostgresRow) -> [UInt8]?
    ) -> SealedColumn {
        let keyColumns = key.map { "\($0)" }, sealed = "\(column)"
        let selected = (keyColumns + also.map { "\($0)" } + [sealed]).joined(separator: ", ")
        let order = keyColumns.joined(separator: ", ")
        let first = "SELECT \(selected) FROM \(table) WHERE \(sealed) IS NOT NULL ORDER BY \(order) LIMIT $1"
        let placeholders = (1...keyColumns.count).map { "$\($0)" }.joined(separator: ", ")
        let next = """
            SELECT \(selected) FROM \(table) WHERE \(sealed) IS NOT NULL AND (\(order)) > (\(placeholders))
            ORDER BY \(order) LIMIT $\(keyColumns.count + 1)
            """
        let matches = keyColumns.enumerated().map { "\($1) = $\($0 + 2)" }.joined(separator: " AND ")
        let returned = returning.isEmpty ? "" : " RETURNING " + returning.map { "\($0)" }.joined(separator: ", ")
        let update = "UPDATE \(table) SET \(sealed) = $1 WHERE \(matches) AND \(sealed) = $\(keyColumns.count + 2)\(returned)"
        return SealedColumn(
            name: "\(table).\(sealed)", variable: variable, keys: keys,
            read: { after, limit, conn in
                let query =
                    if let after {
                        PostgresQuery(unsafeSQL: next, binds: after.map(\.postgresText) + [limit.postgresText])
                    } else {
                        PostgresQuery(unsafeSQL: first, binds: [limit.postgresText])
                    }
                return try await conn.query(query).compactMap { row in
                    let position = keyColumns.compactMap { row.string($0) }
                    guard position.count == keyColumns.count, let value = row.bytes(sealed), let associatedData = binding(row) else { return nil }
                    return Value(position: position, sealed: value, associatedData: associatedData)
                }
            },
            replace: { value, resealed, conn in
                let query = PostgresQuery(
                    unsafeSQL: update,
                    binds: [PostgresBytes(resealed).postgresText] + value.position.map(\.postgresText) + [PostgresBytes(value.sealed).postgresText])
                guard let replaced else { return try await conn.query(query).affectedRows == 1 }
                try await conn.query("BEGIN")
                do {
                    let rows = try await conn.query(query)
                    if let row = rows.first { try await replaced(row, resealed, conn) }
                    try await conn.query("COMMIT")
                    return rows.affectedRows == 1
                } catch {
                    _ = try? await conn.query("ROLLBACK")
                    throw error
                }
            })
    }
}

/// Seals again, under the sealing key, every long-lived value still sealed under a key of the
/// variable's `_ACCEPTED` list, so that the old key can be dropped: how a data-at-rest key is
/// changed. It runs only in a service configured with accepted keys (the columns of the others
/// are skipped), a first pass `SIGNET_RESEAL_FIRST_DELAY_SECONDS` (10) after start-up and then
/// every `SIGNET_RESEAL_INTERVAL_SECONDS` (an hour) while the keys stay accepted: a replica
/// not yet given the new key, or a read model applying an old event again, may still write a
/// value under the old one.
///
/// One replica passes at a time (a session-level advisory lock, tried: a replica that finds it
/// taken skips its pass); each batch is read in a statement of its own and each value replaced
/// by a compare-and-set update, so nothing a request writes meanwhile is undone.
/// After each pass of a column it logs, and publishes as `signet_sealed_values{column,key}`,
/// how many values it sealed again, how many are still under an accepted key (`accepted`: a
/// race lost, counted again next pass) and how many open under no key at all (`none`: sealed
/// under a key no longer listed, or damaged), with the pass's time
/// (`signet_sealed_values_pass_timestamp_seconds{column}`: a replica whose passes another's
/// lock skipped keeps older figures). When a pass ends with neither, the log line says
/// that the accepted keys may be dropped, once every replica runs with the new key.
public final class KeyResealer: Service {
    public let name = "key-resealer"
    /// Values per batch (one `SELECT` each), unless given.
    public static let defaultBatchSize = 500

    public struct Outcome: Sendable, Equatable {
        public var scanned = 0
        public var resealed = 0
        public var underAccepted = 0
        public var unreadable = 0

        public init(scanned: Int = 0, resealed: Int = 0, underAccepted: Int = 0, unreadable: Int = 0) {
            self.scanned = scanned
            self.resealed = resealed
            self.underAccepted = underAccepted
            self.unreadable = unreadable
        }
    }

    let columns: [SealedColumn]
    let pool: PostgresPool
    let logger: Logger
    let metrics: MetricsRegistry
    let firstDelay: Duration
    let batchSize: Int
    private let schedule: PeriodicTask
    private let passes = PlainLock(0)

    /// Nil when no column's keys accept another key: nothing to do.
    public init?(
        columns: [SealedColumn], pool: PostgresPool, logger: Logger, interval: Duration = .seconds(3600), firstDelay: Duration = .seconds(10),
        batchSize: Int = defaultBatchSize, metrics: MetricsRegistry = .shared
    ) {
        let columns = columns.filter(\.keys.acceptsOthers)
        guard !columns.isEmpty else { return nil }
        self.columns = columns
        self.pool = pool
        self.logger = logger
        self.metrics = metrics
        self.firstDelay = firstDelay
        self.batchSize = batchSize
        schedule = PeriodicTask(interval: interval)
    }

    /// With the service's schedule (``ServiceConfiguration/resealInterval``,
    /// ``ServiceConfiguration/resealFirstDelay``); nil when nothing is to be done.
    public convenience init?(columns: [SealedColumn], context: ServiceContext) {
        self.init(
            columns: columns, pool: context.pool, logger: context.logger, interval: context.configuration.resealInterval,
            firstDelay: context.configuration.resealFirstDelay)
    }

    public func run() async throws {
        let interval = schedule.interval, firstDelay = firstDelay
        await schedule.run(
            logger: logger, failure: "re-sealing under the new key failed; tried again at the next pass",
            nextWait: { [passes] in passes.withLock { $0 } == 0 ? firstDelay : interval }
        ) {
            defer { self.passes.withLock { $0 += 1 } }
            _ = try await self.pass()
        }
    }

    public func shutdown() async { await schedule.stopRunning() }

    /// The advisory lock one replica of a service holds while it passes (each service has a
    /// database of its own).
    static let lockKey: Int64 = 0x7369_676E_6574_7273

    /// One pass over every column: the outcome of each, by name; empty when another replica
    /// is passing.
    @discardableResult
    public func pass() async throws -> [String: Outcome] {
        try await pool.withConnection { conn in
            guard try await conn.query("SELECT pg_try_advisory_lock(\(Self.lockKey)) AS locked").first?.bool("locked") == true else {
                logger.debug("another replica is re-sealing; this one's pass is skipped")
                return [:]
            }
            do {
                let outcomes = try await pass(on: conn)
                try await conn.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                return outcomes
            } catch {
                _ = try? await conn.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                throw error
            }
        }
    }

    private func pass(on conn: PostgresConnection) async throws -> [String: Outcome] {
        var outcomes: [String: Outcome] = [:]
        for column in columns {
            let outcome = try await pass(column, on: conn)
            outcomes[column.name] = outcome
            Gauge(label: "signet_sealed_values", dimensions: [("column", column.name), ("key", "accepted")], registry: metrics)
                .record(outcome.underAccepted)
            Gauge(label: "signet_sealed_values", dimensions: [("column", column.name), ("key", "none")], registry: metrics)
                .record(outcome.unreadable)
            Counter(label: "signet_sealed_values_resealed_total", dimensions: [("column", column.name)], registry: metrics)
                .increment(by: outcome.resealed)
            // When this replica's figures were taken: one replica passes at a time, so the
            // others' gauges are as old as their last pass; the newest is the one to read.
            Gauge(label: "signet_sealed_values_pass_timestamp_seconds", dimensions: [("column", column.name)], registry: metrics)
                .record(Date().timeIntervalSince1970.rounded(.down))
            var metadata: Logger.Metadata = [
                "signet.column": "\(column.name)", "signet.key_variable": "\(column.variable)", "signet.scanned": "\(outcome.scanned)",
                "signet.resealed": "\(outcome.resealed)", "signet.under_accepted": "\(outcome.underAccepted)",
                "signet.unreadable": "\(outcome.unreadable)",
            ]
            if outcome.unreadable > 0 {
                metadata["signet.hint"] = "sealed under a key listed nowhere, or damaged: they stay as they are"
                logger.warning("values open under no key of \(column.variable) or \(column.variable)_ACCEPTED", metadata: metadata)
            } else if outcome.underAccepted == 0 {
                logger.info(
                    "every value of \(column.name) is sealed under \(column.variable): \(column.variable)_ACCEPTED may be dropped once every replica seals with the new key",
                    metadata: metadata)
            } else {
                logger.info("values of \(column.name) still under an accepted key: the next pass tries them again", metadata: metadata)
            }
        }
        return outcomes
    }

    private func pass(_ column: SealedColumn, on conn: PostgresConnection) async throws -> Outcome {
        var outcome = Outcome()
        var after: [String]?
        while true {
            try Task.checkCancellation()
            let batch = try await column.read(after, batchSize, conn)
            for value in batch {
                outcome.scanned += 1
                guard let opened = try? column.keys.opening(value.sealed, associatedData: value.associatedData) else {
                    outcome.unreadable += 1
                    continue
                }
                if opened.underSealingKey { continue }
                let resealed = try column.keys.seal(opened.plaintext, associatedData: value.associatedData)
                if try await column.replace(value, resealed, conn) {
                    outcome.resealed += 1
                } else {
                    outcome.underAccepted += 1
                }
            }
            guard batch.count == batchSize, let last = batch.last else { break }
            after = last.position
        }
        return outcome
    }
}
