import Platform
import CLibPQ
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Owns one libpq connection. Every method blocks and must run on the connection's own
/// queue (see ``PostgresConnection``), never on the cooperative pool.
final class PQConnection: @unchecked Sendable {
    // @unchecked Sendable: touched by one thread at a time: the task that leased it, on an
    // event loop's thread (PQConnection+EventLoop), or its PostgresConnection's serial queue.
    var conn: OpaquePointer?
    let conninfo: String
    /// Statements prepared on this session, by SQL text: a statement the service runs again
    /// is parsed and planned by the server once per connection, not on every call.
    var prepared: [String: String] = [:]
    var nextStatement = 0
    /// Set when a call reported the session over (SQLSTATE 57P…/08…) while libpq still says
    /// CONNECTION_OK (it has not read the end of the stream yet): reconnect before next use.
    var lost = false
    /// libpq's non-blocking mode, on while a statement is sent from an event loop.
    private var nonBlocking = false
    /// Beyond this many, new statements run unnamed (the text of a statement may vary, e.g.
    /// with the length of a list; the cache must not grow without bound).
    static let maxPreparedStatements = 512

    init(conninfo: String) {
        self.conninfo = conninfo
    }

    deinit {
        if let conn { PQfinish(conn) }
    }

    var isHealthy: Bool {
        guard let conn, !lost else { return false }
        return PQstatus(conn) == CONNECTION_OK
    }

    /// Whether the server ended this session while it sat idle in the pool: a restart or
    /// `pg_terminate_backend` sends an idle backend's client a FATAL message (57P01) and closes
    /// the socket, which libpq only notices on its next read, i.e. as the failure of the next
    /// statement. An idle session receives nothing otherwise (no LISTEN here), so a readable
    /// socket is read now, without sending anything, and a closed one is known before any
    /// statement is sent. Cost: one `poll` with a zero timeout per lease.
    func endedWhileIdle() -> Bool {
        guard let conn, PQtransactionStatus(conn) == PQTRANS_IDLE else { return false }
        let fd = PQsocket(conn)
        var pfd = pollfd(fd: fd, events: Self.readable | Self.peerClosed, revents: 0)
        guard poll(&pfd, 1, 0) > 0 else { return false }
        if pfd.revents & Self.closedOrFailed != 0 { return true }
        // Readable: an error or notice the server sent on its own. Consume it; a session it
        // ended is CONNECTION_BAD once the end of the stream is read.
        if PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK { return true }
        var again = pollfd(fd: fd, events: Self.peerClosed, revents: 0)
        return poll(&again, 1, 0) > 0 && again.revents != 0
    }

    private static let readable = Int16(POLLIN)
    /// POLLRDHUP (Linux; Glibc exports it only under _GNU_SOURCE): the peer closed its side.
    private static let peerClosed: Int16 = 0x2000
    private static let closedOrFailed: Int16 = peerClosed | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)

    /// Connects (or reconnects) and sets the session defaults Signet relies on.
    func connect() throws {
        if let conn { PQfinish(conn) }
        conn = nil
        lost = false
        prepared = [:]
        nextStatement = 0
        conn = PQconnectdb(conninfo)
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            if let c = conn { PQfinish(c) }
            self.conn = nil
            throw PostgresError(.connectFailed, message: message)
        }
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        nonBlocking = false
        _ = try execSimple("SET TIME ZONE 'UTC'; SET DateStyle = 'ISO, YMD'; SET client_min_messages = warning")
    }

    /// Reconnects when the connection is gone or broken, or the server ended it while idle.
    /// Nothing has been sent on it yet, so this is always safe.
    func ensureConnected() throws {
        if !isHealthy || endedWhileIdle() { try connect() }
    }

    /// Commits the open transaction.
    ///
    /// - Throws: `connectionLost` when the connection was already known lost, so COMMIT was
    ///   never sent and the transaction cannot have committed (safe to run again);
    ///   `commitOutcomeUnknown` when it was lost while COMMIT was on its way: the server may
    ///   have committed or not, and nothing may be repeated blindly.
    func commit() throws {
        guard isHealthy else { throw PostgresError(.connectionLost, message: "connection lost before COMMIT was sent") }
        do {
            _ = try execSimple("COMMIT")
        } catch let error as PostgresError where error.code == .connectionLost {
            throw PostgresError(.commitOutcomeUnknown, sqlState: error.sqlState, message: error.message)
        }
    }

    /// Runs one statement with bound text parameters (extended protocol), as a statement
    /// prepared on this connection the first time its text is seen.
    func exec(_ query: PostgresQuery) throws -> PostgresRows {
        guard let conn else { throw PostgresError(.connectionLost, message: "not connected") }
        setNonBlocking(false)
        let plan = try self.plan(query)
        if plan.mustPrepare, let name = plan.name {
            // Parameter types are left to the server to infer, as for an unnamed statement. A
            // failed prepare (a syntax error, an aborted transaction) reports like the call.
            _ = try consume(PQprepare(conn, name, plan.sql, plan.parameterCount, nil))
            didPrepare(plan)
        }
        let result = Self.withParameters(plan.binds) { params in
            if let name = plan.name {
                PQexecPrepared(conn, name, plan.parameterCount, params, nil, nil, 0)
            } else {
                PQexecParams(conn, plan.sql, plan.parameterCount, nil, params, nil, nil, 0)
            }
        }
        do {
            return try consume(result)
        } catch let error as PostgresError {
            if let deallocate = forgetIfStale(plan, after: error) { _ = try? execSimple(deallocate) }
            throw error
        }
    }

    /// Runs one or more statements without parameters (simple protocol), for migrations.
    @discardableResult
    func execSimple(_ sql: String) throws -> PostgresRows {
        guard let conn else { throw PostgresError(.connectionLost, message: "not connected") }
        setNonBlocking(false)
        return try consume(PQexec(conn, sql))
    }

    /// Switches libpq's non-blocking mode (the blocking calls above need it off: in it, a
    /// PQsendQuery could return before the whole statement is sent).
    func setNonBlocking(_ on: Bool) {
        guard on != nonBlocking, let conn else { return }
        if PQsetnonblocking(conn, on ? 1 : 0) == 0 { nonBlocking = on }
    }

    /// Closes the session at once (a statement was cancelled mid-way: what the server did is
    /// unknown, and the connection cannot be reused). The next lease reconnects.
    func drop() {
        if let conn { PQfinish(conn) }
        conn = nil
        lost = true
        nonBlocking = false
        prepared = [:]
    }

    func consume(_ result: OpaquePointer?) throws -> PostgresRows {
        guard let result else {
            throw lostOrServer(sqlState: nil, message: conn.map { String(cString: PQerrorMessage($0)) } ?? "no result")
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(rows: [], affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0)
        case PGRES_TUPLES_OK:
            let nFields = Int(PQnfields(result))
            let nRows = Int(PQntuples(result))
            var columns: [String] = []
            columns.reserveCapacity(nFields)
            for f in 0..<nFields { columns.append(String(cString: PQfname(result, Int32(f)))) }
            var rows: [PostgresRow] = []
            rows.reserveCapacity(nRows)
            for r in 0..<nRows {
                var values: [String?] = []
                values.reserveCapacity(nFields)
                for f in 0..<nFields {
                    if PQgetisnull(result, Int32(r), Int32(f)) == 1 {
                        values.append(nil)
                    } else {
                        values.append(String(cString: PQgetvalue(result, Int32(r), Int32(f))))
                    }
                }
                rows.append(PostgresRow(columns: columns, values: values))
            }
            return PostgresRows(rows: rows, affectedRows: nRows)
        default:
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result))
            throw lostOrServer(sqlState: sqlState, message: message)
        }
    }

    func lostOrServer(sqlState: String?, message: String) -> PostgresError {
        if conn == nil || PQstatus(conn) != CONNECTION_OK {
            lost = true
            return PostgresError(.connectionLost, sqlState: sqlState, message: message)
        }
        // The session is over: 57P01 admin_shutdown (restart, pg_terminate_backend), 57P02
        // crash_shutdown, 57P03 cannot_connect_now, 57P04/57P05 (database dropped, idle
        // session timeout), and class 08 (connection exception).
        if let s = sqlState, s.hasPrefix("57P") || s.hasPrefix("08") {
            lost = true
            return PostgresError(.connectionLost, sqlState: s, message: message)
        }
        return PostgresError(.server, sqlState: sqlState, message: message)
    }
}

/// A leased connection. Its calls run libpq on the connection's own serial dispatch queue
/// and are awaited through continuations.
public final class PostgresConnection: Sendable {
    /// Whether statements issued on an ``EventLoop`` use libpq's non-blocking API there
    /// (`SIGNET_DB_NONBLOCKING`, on unless `0`); off, they block on the connection's queue.
    public static let nonBlockingOnLoops = ProcessInfo.processInfo.environment["SIGNET_DB_NONBLOCKING"] != "0"

    let pq: PQConnection
    let queue: DispatchQueue

    init(conninfo: String, id: Int) {
        pq = PQConnection(conninfo: conninfo)
        queue = DispatchQueue(label: "signet.postgres.connection.\(id)")
    }

    /// Runs a statement with bound parameters.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        // On an event loop (an HTTP handler in loop mode): sent without blocking, awaited on
        // the loop's epoll set.
        if Self.nonBlockingOnLoops, let loop = EventLoop.current { return try await pq.execOnLoop(query, loop: loop) }
        let pq = self.pq
        // Blocking libpq call: runs on this connection's queue, not the cooperative pool.
        return try await runBlockingPQ { try pq.exec(query) }
    }

    /// Runs statements without parameters (simple protocol).
    public func execute(_ sql: String) async throws {
        if Self.nonBlockingOnLoops, let loop = EventLoop.current {
            _ = try await pq.execSimpleOnLoop(sql, loop: loop)
            return
        }
        let pq = self.pq
        _ = try await runBlockingPQ { try pq.execSimple(sql) }
    }

    func ensureConnected() async throws {
        let pq = self.pq
        if Self.nonBlockingOnLoops, EventLoop.current != nil {
            // The checks do not block (a poll with a zero timeout); a connect does, and runs on
            // the connection's queue (rare: a new or lost connection).
            if pq.isHealthy && !pq.endedWhileIdle() { return }
            try await onQueue { try pq.connect() }
            return
        }
        try await runBlockingPQ { try pq.ensureConnected() }
    }

    func reconnect() async throws {
        let pq = self.pq
        try await runBlockingPQ { try pq.connect() }
    }

    func commit() async throws {
        if Self.nonBlockingOnLoops, let loop = EventLoop.current { return try await pq.commitOnLoop(loop: loop) }
        let pq = self.pq
        try await runBlockingPQ { try pq.commit() }
    }

    var isHealthy: Bool {
        get async {
            let pq = self.pq
            return await withCheckedContinuation { c in queue.async { c.resume(returning: pq.isHealthy) } }
        }
    }

    private func runBlockingPQ<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        // A handler running inline on the HTTP server's receiving thread first moves to the
        // handler threads: that thread serves other connections and never blocks.
        if BlockingExecutor.currentThreadRunsInline { await BlockingExecutor.leaveReceivingThread() }
        // On a BlockingExecutor thread (HTTP handlers run there) the call runs inline: the
        // thread may block, and the hop to the connection's queue and back is saved. The
        // connection is leased to this task alone, so its queue has nothing else to order.
        if BlockingExecutor.currentThreadMayBlock { return try body() }
        return try await onQueue(body)
    }

    /// Runs a blocking libpq call on this connection's queue and awaits it.
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            queue.async {
                do { c.resume(returning: try body()) } catch { c.resume(throwing: error) }
            }
        }
    }
}
