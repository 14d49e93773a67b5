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
/// Connections are opened lazily up to `poolSize`. A connection found broken (for instance
/// after the server restarted) is reconnected before it is lent again; a transaction whose
/// `BEGIN` fails because its connection broke is retried once on a fresh connection, since
/// nothing has happened yet.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    let logger: Logger

    private struct State {
        var idle: [PostgresConnection] = []
        var created = 0
        var waiters: [CheckedContinuation<PostgresConnection, any Error>] = []
        var closed = false
    }

    private let state = PlainLock(State())
    private let nextID = Atomic<Int>(0)

    public init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Lends a connection to `body` and takes it back afterwards.
    @discardableResult
    public func withConnection<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await lease()
        do {
            let value = try await body(connection)
            release(connection)
            return value
        } catch {
            release(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    @discardableResult
    public func withTransaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            do {
                try await connection.query("BEGIN")
            } catch let error as PostgresError where error.isConnectionError {
                // Nothing ran yet: reconnect and begin again, once.
                try await connection.reconnect()
                try await connection.query("BEGIN")
            }
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT")
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
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
