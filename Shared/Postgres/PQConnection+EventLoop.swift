import CLibPQ
import Platform
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Statements sent without blocking, awaited on an event loop

/// A libpq result handed from the loop to the awaiting task (which clears it in `consume`).
struct PQResultHandle: @unchecked Sendable {
    // @unchecked Sendable: owned by whoever holds it; exactly one side clears it.
    let pointer: OpaquePointer?
}

extension PQConnection {
    /// Runs one statement with bound parameters, like ``exec(_:)``, with libpq's non-blocking
    /// API on `loop`, which must be the calling thread's: the statement is sent
    /// (PQsendQueryPrepared and PQflush), the task waits for the socket on the loop's epoll set
    /// and resumes once every result is read. The first use of a statement on this
    /// connection prepares it first (one more round trip, as in ``exec(_:)``).
    ///
    /// - Throws: as ``exec(_:)``; ``PostgresError/Code-swift.struct/queryCancelled`` when the
    ///   task is cancelled meanwhile (the connection is then closed).
    func execOnLoop(_ query: PostgresQuery, loop: EventLoop) async throws -> PostgresRows {
        guard conn != nil else { throw PostgresError(.connectionLost, message: "not connected") }
        let plan = try self.plan(query)
        if plan.mustPrepare, let name = plan.name {
            let prepare = try await roundTrip(on: loop) { PQsendPrepare($0, name, plan.sql, plan.parameterCount, nil) }
            _ = try consume(prepare.pointer)
            didPrepare(plan)
        }
        let result = try await roundTrip(on: loop) { conn in
            Self.withParameters(plan.binds) { params in
                if let name = plan.name {
                    PQsendQueryPrepared(conn, name, plan.parameterCount, params, nil, nil, 0)
                } else {
                    PQsendQueryParams(conn, plan.sql, plan.parameterCount, nil, params, nil, nil, 0)
                }
            }
        }
        do {
            return try consume(result.pointer)
        } catch let error as PostgresError {
            if let deallocate = forgetIfStale(plan, after: error), let r = try? await roundTrip(on: loop, { PQsendQuery($0, deallocate) }) {
                _ = try? consume(r.pointer)
            }
            throw error
        }
    }

    /// Runs statements without parameters (simple protocol) on `loop`, like ``execSimple(_:)``.
    func execSimpleOnLoop(_ sql: String, loop: EventLoop) async throws -> PostgresRows {
        guard conn != nil else { throw PostgresError(.connectionLost, message: "not connected") }
        let result = try await roundTrip(on: loop) { PQsendQuery($0, sql) }
        return try consume(result.pointer)
    }

    /// ``commit()`` on `loop`. A COMMIT cancelled on its way is `commitOutcomeUnknown`.
    func commitOnLoop(loop: EventLoop) async throws {
        guard isHealthy else { throw PostgresError(.connectionLost, message: "connection lost before COMMIT was sent") }
        do {
            _ = try await execSimpleOnLoop("COMMIT", loop: loop)
        } catch let error as PostgresError where error.code == .connectionLost || error.code == .queryCancelled {
            throw PostgresError(.commitOutcomeUnknown, sqlState: error.sqlState, message: error.message)
        }
    }

    /// Sends with `send` (a PQsend… call, 1 on success) and awaits the statement's result on
    /// `loop`: the first error result if there is one, else the last result.
    private func roundTrip(on loop: EventLoop, _ send: (OpaquePointer) -> Int32) async throws -> PQResultHandle {
        guard let conn else { throw PostgresError(.connectionLost, message: "not connected") }
        precondition(loop.isCurrent, "a statement on an event loop is sent from that loop's thread")
        setNonBlocking(true)
        guard send(conn) == 1 else {
            throw lostOrServer(sqlState: nil, message: String(cString: PQerrorMessage(conn)))
        }
        let call = PQLoopCall(pq: self, loop: loop)
        return try await withTaskCancellationHandler {
            // The body runs at once, on this thread (the loop's).
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<PQResultHandle, any Error>) in call.begin(c) }
        } onCancel: {
            loop.execute { call.cancel() }
        }
    }
}

/// One statement in flight on an event loop: flushes what libpq could not send at once,
/// reads what arrives, and resumes the task when libpq has returned its last result. Touched
/// on the loop's thread only.
final class PQLoopCall: @unchecked Sendable {
    // @unchecked Sendable: created on the loop's thread; cancel() reaches it through
    // EventLoop.execute, so every access is on that thread.
    private let pq: PQConnection
    private let loop: EventLoop
    private var continuation: CheckedContinuation<PQResultHandle, any Error>?
    private var watch: EventLoop.Watch?
    private var fd: Int32 = -1
    /// PQflush has not sent everything yet.
    private var flushing = true
    private var kept: OpaquePointer?
    private var keptIsError = false

    init(pq: PQConnection, loop: EventLoop) {
        self.pq = pq
        self.loop = loop
    }

    func begin(_ continuation: CheckedContinuation<PQResultHandle, any Error>) {
        self.continuation = continuation
        guard let conn = pq.conn else { return fail(PostgresError(.connectionLost, message: "not connected")) }
        fd = PQsocket(conn)
        step(readable: false)
    }

    /// The task was cancelled (its request's deadline passed): the statement is abandoned and
    /// the connection closed, since what the server does with it is unknown.
    func cancel() {
        guard continuation != nil else { return }
        pq.drop()
        fail(PostgresError(.queryCancelled, message: "the statement was cancelled"))
    }

    private func ready(_ mask: UInt32) {
        guard continuation != nil else { return }
        if mask == EventLoop.stopping {
            pq.drop()
            return fail(PostgresError(.connectionLost, message: "the event loop stopped"))
        }
        step(readable: mask & (EventLoop.readable | EventLoop.failed) != 0)
    }

    private func step(readable: Bool) {
        guard let conn = pq.conn else { return fail(PostgresError(.connectionLost, message: "not connected")) }
        if readable && PQconsumeInput(conn) == 0 {
            return fail(pq.lostOrServer(sqlState: nil, message: String(cString: PQerrorMessage(conn))))
        }
        if flushing {
            let r = PQflush(conn)
            if r < 0 { return fail(pq.lostOrServer(sqlState: nil, message: String(cString: PQerrorMessage(conn)))) }
            flushing = r == 1
        }
        while !flushing && PQisBusy(conn) == 0 {
            guard let result = PQgetResult(conn) else { return complete() }
            keep(result)
        }
        let w = watch ?? loop.watch { [self] mask in ready(mask) }
        watch = w
        guard loop.arm(w, fd: fd, events: EventLoop.readable | (flushing ? EventLoop.writable : 0)) else {
            pq.drop()
            return fail(PostgresError(.connectionLost, message: "the socket could not be watched"))
        }
    }

    /// PQexec's rule: the last result, unless an earlier one is an error.
    private func keep(_ result: OpaquePointer) {
        let status = PQresultStatus(result)
        let isError = status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE
        if kept != nil && keptIsError {
            PQclear(result)
            return
        }
        if let kept { PQclear(kept) }
        kept = result
        keptIsError = isError
    }

    private func complete() {
        guard let c = continuation else { return }
        continuation = nil
        if let watch { loop.unwatch(watch) }
        watch = nil
        guard let kept else {
            let message = pq.conn.map { String(cString: PQerrorMessage($0)) } ?? "no result"
            return c.resume(throwing: pq.lostOrServer(sqlState: nil, message: message))
        }
        self.kept = nil
        c.resume(returning: PQResultHandle(pointer: kept))
    }

    private func fail(_ error: PostgresError) {
        guard let c = continuation else { return }
        continuation = nil
        if let watch { loop.unwatch(watch) }
        watch = nil
        if let kept { PQclear(kept) }
        kept = nil
        c.resume(throwing: error)
    }
}
