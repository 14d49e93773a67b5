import Platform
import Synchronization

/// Pool settings: the libpq connection string and the pool size.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection string or URL (`postgresql://signet@127.0.0.1:54329/signet_registration`).
    public var conninfo: String
    public var poolSize: Int

    public init(conninfo: String, poolSize: Int = 8) {
        self.conninfo = conninfo
        self.poolSize = poolSize
    }
}

/// A pool of libpq connections, shaped like postgres-nio's: `withConnection { }` and
/// `withTransaction { }`, queries built by interpolation with bound parameters.
///
/// Connections are opened lazily up to `poolSize`.
///
/// ## Lost connections (a PostgreSQL restart, a terminated backend, the network)
///
/// A lost connection is the database being unavailable, not the request being wrong: it
/// surfaces as a ``PostgresError`` whose ``PostgresError/isConnectionError`` is true, which
/// the HTTP edge answers with 503 `database_unavailable` and `Retry-After`. Before that, the
/// pool retries once, transparently, only where nothing can have taken effect:
///
/// - **Before anything is sent.** A connection is checked when it is lent: one the server
///   ended while it sat idle is reconnected first (``PQConnection/endedWhileIdle()``). A
///   failed connect is tried once more after ``reconnectDelay`` (a restarting server refuses
///   connections for a moment).
/// - **A whole transaction that never reached COMMIT.** When `withTransaction`'s BEGIN, body
///   or the connection before COMMIT fails with a lost connection, the server has rolled the
///   transaction back, so the body runs once more, from the start, on a fresh connection.
///   Rule for bodies: a `withTransaction` body may run twice. It must act only through its
///   connection and on values it returns or captured variables it assigns, never on the
///   world outside (no HTTP calls, no Kafka sends, no cache changes, no one-time side
///   effects): those go after the commit, or into the outbox in the same transaction. A
///   body that cannot follow the rule passes `retryingOnConnectionLoss: false`.
/// - **Never** a statement sent outside a transaction (`withConnection`: it may have
///   committed on its own), and never a COMMIT whose answer was lost
///   (``PostgresError/Code-swift.struct/commitOutcomeUnknown``): either could apply a change
///   twice. Those fail, and the client decides.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    let logger: Logger

    /// The pause before trying a failed connect again.
    public static let reconnectDelay: Duration = .milliseconds(200)

    private struct State {
        var idle: [PostgresConnection] = []
        var created = 0
        var waiters: [CheckedContinuation<PostgresConnection, any Error>] = []
        var closed = false
    }

    private let state = PlainLock(State())
    private let nextID = Atomic<Int>(0)
    private let retries = Counter(label: "signet_postgres_retries_total", dimensions: [("kind", "transaction")])
    private let connectRetries = Counter(label: "signet_postgres_retries_total", dimensions: [("kind", "connect")])

    public init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Lends a connection to `body` and takes it back afterwards. A failed connect is tried
    /// once more; `body` itself is never repeated.
    @discardableResult
    public func withConnection<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection: PostgresConnection
        do {
            connection = try await lease()
        } catch let error as PostgresError where error.code == .connectFailed {
            connectRetries.increment()
            logger.warning("database connect failed; retrying once", metadata: [LogKey.error: "\(error)"])
            try await Task.sleep(for: Self.reconnectDelay)
            connection = try await lease()
        }
        return try await run(body, on: connection)
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    ///
    /// - Parameter retryingOnConnectionLoss: run the whole transaction once more on a fresh
    ///   connection when the connection was lost before COMMIT was sent (see the type's
    ///   documentation for what a body must then respect). Defaults to true.
    /// - Throws: what `body` throws; ``PostgresError`` with `isConnectionError` when the
    ///   database stays unreachable (or `commitOutcomeUnknown`, never retried).
    @discardableResult
    public func withTransaction<T>(
        retryingOnConnectionLoss: Bool = true,
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await transaction(body)
        } catch let error as PostgresError where retryingOnConnectionLoss && error.isRetryableTransactionFailure {
            retries.increment()
            logger.warning("database unreachable before COMMIT; running the transaction again", metadata: [LogKey.error: "\(error)"])
            // A lost session says little about the server (a terminated backend, a dropped
            // link): try at once. A refused connect means it is not accepting yet: pause.
            if error.code == .connectFailed { try await Task.sleep(for: Self.reconnectDelay) }
            return try await transaction(body)
        }
    }

    private func transaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await lease()
        return try await run({ connection in
            try await connection.query("BEGIN")
            let value: T
            do {
                value = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
            try await connection.commit()
            return value
        }, on: connection)
    }

    private func run<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T, on connection: PostgresConnection
    ) async throws -> T {
        do {
            let value = try await body(connection)
            release(connection)
            return value
        } catch {
            release(connection)
            throw error
        }
    }

    /// Runs `SELECT 1`; used by readiness checks.
    public func ping() async throws {
        try await withConnection { try await $0.query("SELECT 1") }
    }

    /// Closes idle connections and fails waiters; leased connections close when returned.
    public func close() {
        let waiters = state.withLock { s -> [CheckedContinuation<PostgresConnection, any Error>] in
            s.closed = true
            s.idle.removeAll()
            let w = s.waiters
            s.waiters.removeAll()
            return w
        }
        for w in waiters { w.resume(throwing: PostgresError(.poolClosed, message: "pool closed")) }
    }

    private enum LeaseAction {
        case use(PostgresConnection)
        case create
        case wait
        case closed
    }

    private func lease() async throws -> PostgresConnection {
        let action = state.withLock { s -> LeaseAction in
            if s.closed { return .closed }
            if let c = s.idle.popLast() { return .use(c) }
            if s.created < configuration.poolSize {
                s.created += 1
                return .create
            }
            return .wait
        }
        let connection: PostgresConnection
        switch action {
        case .closed:
            throw PostgresError(.poolClosed, message: "pool closed")
        case .use(let c):
            connection = c
        case .create:
            connection = PostgresConnection(conninfo: configuration.conninfo, id: nextID.wrappingAdd(1, ordering: .relaxed).newValue)
        case .wait:
            connection = try await withCheckedThrowingContinuation { continuation in
                let immediate = state.withLock { s -> LeaseAction in
                    if s.closed { return .closed }
                    if let c = s.idle.popLast() { return .use(c) }
                    s.waiters.append(continuation)
                    return .wait
                }
                switch immediate {
                case .use(let c): continuation.resume(returning: c)
                case .closed: continuation.resume(throwing: PostgresError(.poolClosed, message: "pool closed"))
                default: break
                }
            }
        }
        do {
            try await connection.ensureConnected()
        } catch {
            release(connection)
            throw error
        }
        return connection
    }

    private func release(_ connection: PostgresConnection) {
        let waiter = state.withLock { s -> CheckedContinuation<PostgresConnection, any Error>? in
            if !s.waiters.isEmpty { return s.waiters.removeFirst() }
            if !s.closed { s.idle.append(connection) } else { s.created -= 1 }
            return nil
        }
        waiter?.resume(returning: connection)
    }
}
