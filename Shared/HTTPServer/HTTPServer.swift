import CMicroHTTPD
import CSignetShims
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Platform
import Synchronization

/// Server limits and binding, from the environment (`SIGNET_HTTP_*`).
public struct HTTPServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// libmicrohttpd's epoll thread pool size.
    public var threads: Int
    /// The body bound of every request, unless ``routeBodyLimit`` gives its route a larger one.
    public var maxBodyBytes: Int
    /// The body bound of a request's route (`GuardedRouter.bodyLimit(method:path:)`), asked only
    /// for a body that passes ``maxBodyBytes``, so that other requests pay no route lookup and
    /// every other route is refused at ``maxBodyBytes`` before more is received (nil: none).
    public var routeBodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)?
    /// Open connections at most, all clients together.
    public var maxConnections: Int
    /// Idle connections are closed after this many seconds.
    public var idleTimeoutSeconds: Int
    /// A handler that has not answered by then gets 503 `request_timeout`.
    public var requestTimeout: Duration
    /// Open connections one client address may hold (see ``ConnectionLimiter``).
    public var maxConnectionsPerAddress: Int
    /// Addresses bounded by `maxConnections` only: gateways and proxies, whose connections
    /// carry everyone's requests.
    public var unlimitedAddresses: [AddressRange]
    /// Past this many open connections, idle ones are closed after
    /// `pressureIdleTimeoutSeconds` (nil: three quarters of `maxConnections`).
    public var pressureHighWater: Int?
    public var pressureIdleTimeoutSeconds: Int
    /// A second listener that serves only `/healthz`, `/readyz` and `/metrics`, with
    /// connections of its own, so that probes are answered when the main listener's
    /// connections are all taken (nil: none).
    public var healthPort: Int?
    /// How requests are received and where handlers run (`SIGNET_HTTP_MODE`).
    public var mode: HTTPServerMode
    /// Each connection's memory in libmicrohttpd (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`): the
    /// request line and header block must fit in it whole (a larger one is answered 431 and
    /// the connection closed), a body streams through it, the response's header block is
    /// written into it. libmicrohttpd zeroes all of it before each request of a kept-alive
    /// connection, so it is a per-request cost (see ``defaultConnectionMemoryBytes``).
    public var connectionMemoryBytes: Int
    /// Tests only (internal): loop mode holds each added connection this long inside
    /// `LoopDaemon.addNow`, after the daemon took it and before it stops counting as in
    /// transit, which widens a window the acceptor must cope with (see there). Zero elsewhere.
    var holdAfterAddForTesting: Duration = .zero

    public init(
        host: String = "127.0.0.1", port: Int, threads: Int = 2, maxBodyBytes: Int = 64 * 1024,
        maxConnections: Int = 1024, idleTimeoutSeconds: Int = 30, requestTimeout: Duration = .seconds(10),
        maxConnectionsPerAddress: Int = 256, unlimitedAddresses: [AddressRange] = [], pressureHighWater: Int? = nil,
        pressureIdleTimeoutSeconds: Int = 2, healthPort: Int? = nil, mode: HTTPServerMode = .fromEnvironment,
        connectionMemoryBytes: Int = HTTPServerConfiguration.defaultConnectionMemoryBytes
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxBodyBytes = maxBodyBytes
        self.maxConnections = maxConnections
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.requestTimeout = requestTimeout
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.unlimitedAddresses = unlimitedAddresses
        self.pressureHighWater = pressureHighWater
        self.pressureIdleTimeoutSeconds = pressureIdleTimeoutSeconds
        self.healthPort = healthPort
        self.mode = mode
        self.connectionMemoryBytes = connectionMemoryBytes
    }

    /// libmicrohttpd's own default, 32 KiB: a header block of up to about 32,200 bytes is taken.
    public static let defaultConnectionMemoryBytes = 32 * 1024

    /// Paths the health listener serves.
    static let probePaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    /// The health listener's own configuration: one thread, few connections, short timeouts.
    func healthListener(port: Int) -> HTTPServerConfiguration {
        HTTPServerConfiguration(
            host: host, port: port, threads: 1, maxBodyBytes: 1024, maxConnections: 64, idleTimeoutSeconds: 5,
            requestTimeout: requestTimeout, maxConnectionsPerAddress: 16, unlimitedAddresses: [], pressureHighWater: 48,
            pressureIdleTimeoutSeconds: 1, healthPort: nil, mode: .pool, connectionMemoryBytes: connectionMemoryBytes)
    }
}

/// An HTTP/1.1 server on libmicrohttpd: epoll with an internal thread pool, and
/// suspend/resume bridged to Swift tasks.
///
/// For each request the C callback gathers headers and the size-bounded body, suspends the
/// connection and starts a Swift task that runs the responder; the task stores the response
/// and resumes the connection, and libmicrohttpd calls back to queue it. No Swift code blocks
/// libmicrohttpd's threads, and no libmicrohttpd call blocks the cooperative pool.
public final class HTTPServer: Service, @unchecked Sendable {
    // @unchecked Sendable: `daemon` is written once in start() before any request can arrive
    // and read in shutdown(); the request accounting is atomic (AdmissionGate); every other
    // mutable field is behind a PlainLock.
    public let name = "http"
    let configuration: HTTPServerConfiguration
    let respond: @Sendable (HTTPRequest) async -> HTTPResponse
    /// Tried first, on the receiving thread: a response when the request's route answers at once
    /// (``HTTPApplication/respondImmediately(to:)``), else nil and ``respond`` runs as a task.
    let immediate: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    let logger: Logger
    private var daemon: OpaquePointer?
    /// Loop mode: one event loop and daemon per receiving thread (see HTTPServer+EventLoops).
    var loopDaemons: [LoopDaemon] = []
    /// Loop mode: the one listening socket, watched by loop 0 (see HTTPServer+Acceptor).
    var acceptor: LoopAcceptor?
    /// Admission, in-flight and suspended counts and the drain flags: atomics, touched 4 times
    /// per request by every receiving thread (a shared mutex there was lock traffic between
    /// the loops on every request).
    private let gate = AdmissionGate()
    let deadlines = RequestDeadlines()
    /// Where handlers run: threads that may block (see ``BlockingExecutor``), shared by every
    /// server of the process, as many as the blocking calls that may run at once.
    let handlerExecutor: BlockingExecutor = .shared
    private let stopped: AsyncStream<Void>
    private let stoppedContinuation: AsyncStream<Void>.Continuation
    /// Per-address caps and idle closing under pressure.
    let connections: ConnectionLimiter
    /// The probes' own listener, when configured.
    let healthListener: HTTPServer?
    /// Whether shutdown first stops accepting (`MHD_quiesce_daemon`). Not for the probes'
    /// listener: it runs one internal thread (no pool), which takes its listening socket out of
    /// epoll by itself when its connections are all taken, and quiescing it then races that
    /// thread (libmicrohttpd panics: "Failed to remove listen FD from epoll set"). Probes may
    /// be answered until the daemon stops.
    let quiescesOnShutdown: Bool

    /// The server's request accounting, lock-free. `suspended` carries the final phase as a
    /// flag bit, so that admitting a request and entering the final phase exclude each other
    /// (one compare-and-exchange each) as they did under one lock.
    final class AdmissionGate: Sendable {
        /// Set once the final phase began: no new request is admitted, so none can be suspended
        /// when the daemon stops (libmicrohttpd aborts if a connection is still suspended then).
        private static let stoppingBit = 1 << 62
        /// Requests whose connection is suspended (handler running, not yet resumed), plus
        /// `stoppingBit`.
        private let suspended = Atomic<Int>(0)
        /// Admitted requests whose responses have not completed.
        private let inFlight = Atomic<Int>(0)
        /// Listener closed; responses carry `Connection: close`.
        private let draining = Atomic<Bool>(false)

        /// Admits a request for suspension, unless the final phase began.
        func admit() -> Bool {
            var current = suspended.load(ordering: .relaxed)
            while true {
                if current & Self.stoppingBit != 0 { return false }
                let (exchanged, original) = suspended.compareExchange(
                    expected: current, desired: current + 1, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
                if exchanged { break }
                current = original
            }
            inFlight.wrappingAdd(1, ordering: .relaxed)
            return true
        }

        func unsuspended() { suspended.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        func finished() { inFlight.wrappingSubtract(1, ordering: .relaxed) }
        var inFlightCount: Int { inFlight.load(ordering: .relaxed) }
        var isDraining: Bool { draining.load(ordering: .relaxed) }
        func startDraining() { draining.store(true, ordering: .releasing) }

        /// Enters the final phase when nothing is suspended; returns whether it is entered.
        func enterFinalPhase() -> Bool {
            let (exchanged, original) = suspended.compareExchange(
                expected: 0, desired: Self.stoppingBit, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
            return exchanged || original & Self.stoppingBit != 0
        }
    }

    /// - Parameters:
    ///   - immediate: answers, on the thread that received the request and without a task, the
    ///     requests it returns a response for; it must neither wait nor block (nil: none).
    ///   - respond: produces the response for a request; must not throw.
    public convenience init(
        configuration: HTTPServerConfiguration, logger: Logger, immediate: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil,
        respond: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        self.init(configuration: configuration, logger: logger, listener: "main", immediate: immediate, respond: respond)
    }

    /// - Parameter listener: names the listener in metrics (`main`, `health`).
    init(
        configuration: HTTPServerConfiguration, logger: Logger, listener: String, immediate: (@Sendable (HTTPRequest) -> HTTPResponse?)?,
        respond: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        self.configuration = configuration
        self.logger = logger
        self.respond = respond
        self.immediate = immediate
        quiescesOnShutdown = listener != "health"
        (stopped, stoppedContinuation) = AsyncStream.makeStream(of: Void.self)
        connections = ConnectionLimiter(
            perAddressLimit: configuration.maxConnectionsPerAddress, unlimited: configuration.unlimitedAddresses,
            highWater: configuration.pressureHighWater ?? configuration.maxConnections * 3 / 4,
            pressureIdleTimeout: .seconds(configuration.pressureIdleTimeoutSeconds),
            listener: listener)
        var probeImmediate: (@Sendable (HTTPRequest) -> HTTPResponse?)?
        if let immediate {
            probeImmediate = { request in HTTPServerConfiguration.probePaths.contains(request.path) ? immediate(request) : nil }
        }
        healthListener = configuration.healthPort.map { port in
            HTTPServer(
                configuration: configuration.healthListener(port: port), logger: logger, listener: "health", immediate: probeImmediate
            ) { request in
                guard HTTPServerConfiguration.probePaths.contains(request.path) else {
                    var r = HTTPResponse.problem(HTTPError(.notFound, detail: "This listener serves probes only."), requestID: request.requestID)
                    r.headers.append(("X-Request-Id", request.requestID))
                    return r
                }
                return await respond(request)
            }
        }
    }

    /// The port bound (differs from the configured one when that was 0).
    public internal(set) var boundPort: Int = 0

    /// Binds and starts serving. Throws when the port cannot be bound.
    public func start() throws {
        if configuration.mode == .loop {
            try startLoops()
            try startHealthListener()
            return
        }
        let cls = Unmanaged.passUnretained(self).toOpaque()
        let d = signet_mhd_start(
            0, UInt16(configuration.port), configuration.host,
            UInt32(configuration.threads), UInt32(configuration.maxConnections),
            UInt32(configuration.idleTimeoutSeconds), configuration.connectionMemoryBytes,
            unsafeBitCast(mhdAccessHandler, to: UnsafeMutableRawPointer.self), cls,
            unsafeBitCast(mhdCompletedHandler, to: UnsafeMutableRawPointer.self), cls,
            unsafeBitCast(mhdAcceptPolicy, to: UnsafeMutableRawPointer.self),
            unsafeBitCast(mhdConnectionNotification, to: UnsafeMutableRawPointer.self), cls)
        guard let d else {
            throw HTTPServerError(description: "could not listen on \(configuration.host):\(configuration.port)")
        }
        daemon = OpaquePointer(d)
        boundPort = Int(signet_mhd_bound_port(d))
        connections.start()
        logger.notice("listening", metadata: ["signet.http.address": "\(configuration.host):\(boundPort)"])
        do {
            try startHealthListener()
        } catch {
            MHD_stop_daemon(daemon)
            daemon = nil
            connections.stop()
            throw error
        }
    }

    private func startHealthListener() throws {
        guard let healthListener else { return }
        do {
            try healthListener.start()
        } catch {
            if configuration.mode == .loop { stopLoopsAfterFailedStart() }
            throw error
        }
    }

    /// The health listener's port (0 when there is none).
    public var healthPort: Int { healthListener?.boundPort ?? 0 }

    /// Serves until ``shutdown()``.
    public func run() async throws {
        if daemon == nil && loopDaemons.isEmpty { try start() }
        for await _ in stopped { break }
    }

    /// Stops accepting connections, waits for in-flight requests (bounded by the request
    /// timeout, after which every handler has answered), then stops the daemon.
    public func shutdown() async {
        guard daemon != nil || !loopDaemons.isEmpty else { return }
        gate.startDraining()
        var listenFD: Int32 = -1
        var handedOver: UInt32 = 0
        if quiescesOnShutdown {
            if let daemon {
                listenFD = signet_mhd_quiesce_draining_backlog(UnsafeMutableRawPointer(daemon), &handedOver)
            } else {
                handedOver = await quiesceLoops()
            }
            if handedOver > 0 {
                logger.info("shutdown: serving the connections queued before the listener closed", metadata: ["signet.http.connections": "\(handedOver)"])
            }
        }
        // In-flight requests finish, and connections accepted before the listener closed (the
        // backlog among them) get to send their request: closing one unanswered would be a
        // reset the client cannot safely retry. A connection that sends nothing is waited for
        // briefly only.
        let now = ContinuousClock.now
        let deadline = now + configuration.requestTimeout + .seconds(1)
        let firstRequestDeadline = now + .seconds(2)
        while ContinuousClock.now < deadline {
            let open = connections.unfinished
            let waiting = gate.inFlightCount > 0 || open.requests > 0
                || (open.awaitingFirstRequest > 0 && ContinuousClock.now < firstRequestDeadline)
            if !waiting { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        // Enter the final phase only when nothing is suspended, atomically with admission;
        // the deadline sweeper guarantees every suspended request is resumed in time.
        while !gate.enterFinalPhase() {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if let daemon {
            MHD_stop_daemon(daemon)
            if listenFD >= 0 { close(listenFD) }
            self.daemon = nil
        } else {
            await stopLoops()
        }
        deadlines.stop()
        connections.stop()
        // Probes are answered (readiness says "draining") until the main listener has stopped.
        await healthListener?.shutdown()
        stoppedContinuation.yield()
        stoppedContinuation.finish()
    }

    var isDraining: Bool { gate.isDraining }

    /// Admits a request for suspension, unless the server is in its final phase.
    func admit() -> Bool { gate.admit() }

    /// Resumes a suspended connection. The connection still counts as suspended while
    /// `MHD_resume_connection` runs (it is thread-safe, and it writes to the daemon's wake-up
    /// pipe, a system call that is not worth holding the lock for), so the final phase of
    /// shutdown cannot stop the daemon under it; the count drops afterwards.
    func resume(_ connection: OpaquePointer, home: LoopDaemon?) {
        MHD_resume_connection(connection)
        // On the loop's own thread, its daemon runs before the next wait (from another thread,
        // the daemon's eventfd wakes the loop).
        if let home, home.loop.isCurrent { home.ready = true }
        gate.unsuspended()
    }

    /// A request admitted by ``admit()`` was answered on its receiving thread: its connection
    /// was never suspended.
    func answeredInline() { gate.unsuspended() }

    func requestFinished() { gate.finished() }
}

/// The server could not start.
public struct HTTPServerError: Error, CustomStringConvertible {
    public let description: String
}

// MARK: - Per-request state

/// What one request accumulates across libmicrohttpd's calls. libmicrohttpd calls back for
/// one connection on one thread at a time; the handler task (or the request's timeout) only
/// touches `completion`, under its lock, before resuming the connection.
final class RequestState: @unchecked Sendable {
    /// Loop mode: the loop and daemon that received the request (nil in pool mode).
    let home: LoopDaemon?
    var method = ""
    var path = ""
    var headers: [(name: String, value: String)] = []
    var query: [String: String] = [:]
    var body: [UInt8] = []
    var tooLarge = false
    /// The request's body bound, once a body passed the server's `maxBodyBytes`.
    private var routeLimit: Int?
    var dispatched = false
    var counted = false
    /// A `Mutex` (stored inline) rather than a PlainLock (a separately allocated pthread mutex,
    /// two more allocations per request): the handler and the timeout are its only other
    /// users, so it is contended only when a timeout races an answer.
    let completion = Mutex(Completion())

    init(home: LoopDaemon?) {
        self.home = home
    }

    /// Whether `size` bytes of body pass this request's bound: `maxBodyBytes`, or past it the
    /// route's (looked up once, only for bodies that large).
    func bodyFits(_ size: Int, _ configuration: HTTPServerConfiguration) -> Bool {
        size <= configuration.maxBodyBytes || size <= bodyLimit(configuration)
    }

    func bodyLimit(_ configuration: HTTPServerConfiguration) -> Int {
        if let routeLimit { return routeLimit }
        let limit = max(configuration.maxBodyBytes, configuration.routeBodyLimit?(method, path) ?? 0)
        routeLimit = limit
        return limit
    }

    /// The end of a dispatched request: the response (the first of the handler's and the
    /// timeout's wins), and, once the handler went on off the receiving thread, the suspended
    /// connection and the request's deadline.
    struct Completion: Sendable {
        var response: HTTPResponse?
        var suspended: ConnectionHandle?
        var deadline: RequestDeadlines.Entry?
        /// Loop mode: the deadline on the receiving loop's timer queue.
        var timer: EventLoop.Timer?
    }

    /// Records the first response; resumes the connection when it is suspended (a response
    /// that arrives while the handler still runs inline is queued by the receiving thread).
    func finish(_ response: HTTPResponse, server: HTTPServer) {
        let action = completion.withLock { c -> (ConnectionHandle, RequestDeadlines.Entry?, EventLoop.Timer?)? in
            if c.response != nil { return nil }
            c.response = response
            guard let suspended = c.suspended else { return nil }
            return (suspended, c.deadline, c.timer)
        }
        guard let (connection, deadline, timer) = action else { return }
        if let deadline { server.deadlines.remove(deadline) }
        if let timer, let home { home.loop.cancel(timer) }
        server.resume(connection.pointer, home: home)
    }
}

struct ConnectionHandle: @unchecked Sendable {
    // The connection stays valid while suspended; only MHD_resume_connection is called on it.
    let pointer: OpaquePointer
}

// MARK: - C callbacks (nonisolated: called on libmicrohttpd's threads)

private let headerIterator: MHD_KeyValueIterator = { cls, kind, key, value in
    guard let cls, let key else { return MHD_Result.YES }
    let state = Unmanaged<RequestState>.fromOpaque(cls).takeUnretainedValue()
    if kind == MHD_ValueKind.HEADER_KIND {
        if state.headers.count < 100 { state.headers.append((lowercasedName(key), value.map { String(cString: $0) } ?? "")) }
    } else if kind == MHD_ValueKind.GET_ARGUMENT_KIND {
        // Left escaped by the server's unescape callback (see mhd.c): decoded here.
        if state.query.count < 100 { state.query[percentDecoded(key)] = value.map(percentDecoded) ?? "" }
    }
    return MHD_Result.YES
}

private let mhdAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let conCls, let uploadDataSize else { return MHD_Result.NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return handleAccess(server: server, home: nil, connection, url, method, uploadData, uploadDataSize, conCls)
}

/// Loop mode: the daemon's context is its LoopDaemon, and the callback runs on its loop.
let mhdLoopAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let conCls, let uploadDataSize else { return MHD_Result.NO }
    let home = Unmanaged<LoopDaemon>.fromOpaque(cls).takeUnretainedValue()
    guard let server = home.server else { return MHD_Result.NO }
    return handleAccess(server: server, home: home, connection, url, method, uploadData, uploadDataSize, conCls)
}

private func handleAccess(
    server: HTTPServer, home: LoopDaemon?, _ connection: OpaquePointer, _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
    _ uploadData: UnsafePointer<CChar>?, _ uploadDataSize: UnsafeMutablePointer<Int>, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    // First call for this request: headers are in.
    guard let existing = conCls.pointee else {
        if let record = signet_mhd_connection_context(UnsafeMutableRawPointer(connection)) {
            Unmanaged<ConnectionLimiter.Record>.fromOpaque(record).takeUnretainedValue().requestStarted()
        }
        let state = RequestState(home: home)
        state.headers.reserveCapacity(16)  // a gateway's request carries about ten
        state.method = method.map { String(cString: $0) } ?? "GET"
        state.path = url.map(requestPath) ?? "/"
        let opaque = Unmanaged.passUnretained(state).toOpaque()
        MHD_get_connection_values(connection, MHD_ValueKind.HEADER_KIND, headerIterator, opaque)
        MHD_get_connection_values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, headerIterator, opaque)
        if let cl = state.headers.first(where: { $0.name == "content-length" }), let n = Int(cl.value),
            !state.bodyFits(n, server.configuration)
        {
            state.tooLarge = true
        }
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        return MHD_Result.YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()

    // Body chunks.
    if uploadDataSize.pointee > 0 {
        let n = uploadDataSize.pointee
        if !state.tooLarge, let uploadData {
            if !state.bodyFits(state.body.count + n, server.configuration) {
                state.tooLarge = true
                state.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: n) { p in
                    state.body.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
                }
            }
        }
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }

    // Resumed with the handler's response.
    if state.dispatched {
        guard let response = state.completion.withLock({ $0.response }) else { return MHD_Result.NO }
        return queue(response, on: connection, closing: server.isDraining)
    }

    // Body complete: build the request, suspend, run the responder on a Swift task.
    state.dispatched = true
    var requestID = state.headers.first(where: { $0.name == "x-request-id" })?.value ?? ""
    if !HTTPRequest.acceptableRequestID(requestID) { requestID = HTTPRequest.newRequestID() }
    if state.tooLarge {
        let r = HTTPResponse.problem(
            HTTPError(.payloadTooLarge, detail: "The body exceeds \(state.bodyLimit(server.configuration)) bytes."),
            requestID: requestID)
        Counter(label: "signet_http_requests_total", dimensions: [("method", state.method), ("route", "unmatched"), ("status", "413")]).increment()
        var withID = r
        withID.headers.append(("X-Request-Id", requestID))
        return queue(withID, on: connection, closing: true)
    }
    let request = HTTPRequest(
        receivedMethod: state.method.uppercased(), path: state.path, query: state.query, lowercasedHeaders: state.headers, body: state.body,
        requestID: requestID)
    state.body = []
    guard server.admit() else {
        // Arrived (on a kept-alive connection) after shutdown's final phase began: not
        // processed; the client may retry on a new connection.
        var r = HTTPResponse.problem(
            HTTPError(.unavailable, detail: "The server is shutting down; retry.", headers: [("Retry-After", "1")]), requestID: requestID)
        r.headers.append(("X-Request-Id", requestID))
        return queue(r, on: connection, closing: true)
    }
    state.counted = true
    // A route that answers at once is answered here, without a task (HTTPApplication's
    // respondImmediately: probes and scrapes).
    if let immediate = server.immediate, let response = immediate(request) {
        server.answeredInline()
        return queue(response, on: connection, closing: server.isDraining)
    }
    // Inline first: the handler's task starts on this thread, and runs here for as long as it
    // neither waits for another thread nor blocks. A handler that completes here is answered
    // at once, without suspending the connection: no hand-off to a handler thread and back,
    // one wake-up per request (the socket's). One that waits (a pool lease, a sleep, a long
    // poll) or is about to block (a libpq call moves itself, see PostgresConnection) goes on
    // on the handler threads, and its connection is suspended until it answers or its
    // deadline passes. This thread never blocks, so the deadline is always answered on time.
    let arrived = ContinuousClock.now
    let respond = server.respond
    let work: Task<Void, Never>
    if let home {
        // Loop mode: the task prefers this loop, so it runs here now (runQueued) and, after
        // any wait, here again; its libpq statements wait on this loop's epoll set.
        work = Task(executorPreference: home.loop) {
            let response = await respond(request)
            state.finish(response, server: server)
        }
        home.loop.runQueued()
    } else {
        let executor = server.handlerExecutor
        work = executor.runInline {
            Task(executorPreference: executor) {
                let response = await respond(request)
                state.finish(response, server: server)
            }
        }
    }
    let timeout = server.configuration.requestTimeout
    let rid = requestID
    let answered = state.completion.withLock { c -> HTTPResponse? in
        if let response = c.response { return response }
        // Suspended under the lock that `finish` takes, so that no resume can come first;
        // the deadline counts from the request's arrival.
        MHD_suspend_connection(connection)
        c.suspended = ConnectionHandle(pointer: connection)
        let fire: @Sendable () -> Void = {
            // Cancelling the task also cancels a statement it awaits on a loop (the
            // connection is closed, see PostgresConnection).
            work.cancel()
            var r = HTTPResponse.problem(HTTPError(.requestTimeout, detail: "The request did not finish in time."), requestID: rid)
            r.headers.append(("X-Request-Id", rid))
            state.finish(r, server: server)
        }
        if let home {
            c.timer = home.loop.schedule(at: arrived + timeout, fire)
        } else {
            c.deadline = server.deadlines.add(at: arrived + timeout, fire)
        }
        return nil
    }
    guard let answered else { return MHD_Result.YES }
    server.answeredInline()
    return queue(answered, on: connection, closing: server.isDraining)
}

/// A header name lower-cased (ASCII) while it is copied: one pass, one allocation at most.
private func lowercasedName(_ c: UnsafePointer<CChar>) -> String {
    let raw = UnsafeBufferPointer(start: UnsafeRawPointer(c).assumingMemoryBound(to: UInt8.self), count: strlen(c))
    return String(unsafeUninitializedCapacity: raw.count) { out in
        for (i, b) in raw.enumerated() { out[i] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
        return raw.count
    }
}

/// The request path as sent (escapes kept, see mhd.c), with any raw byte outside printable
/// ASCII escaped, so that the router judges every byte (and invalid UTF-8 is not repaired
/// into U+FFFD on the way).
private func requestPath(_ url: UnsafePointer<CChar>) -> String {
    let raw = UnsafeBufferPointer(start: UnsafeRawPointer(url).assumingMemoryBound(to: UInt8.self), count: strlen(url))
    if raw.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return String(decoding: raw, as: UTF8.self) }
    var escaped = ""
    for b in raw {
        if b > 0x20 && b < 0x7F { escaped.unicodeScalars.append(Unicode.Scalar(b)) } else { escaped += "%" + String(b, radix: 16, uppercase: true).leftPadded() }
    }
    return escaped
}

/// Percent-decodes a query key or value; a broken escape stays as it is (as libmicrohttpd
/// did), invalid UTF-8 is repaired.
private func percentDecoded(_ c: UnsafePointer<CChar>) -> String {
    let raw = UnsafeBufferPointer(start: UnsafeRawPointer(c).assumingMemoryBound(to: UInt8.self), count: strlen(c))
    guard raw.contains(UInt8(ascii: "%")) else { return String(decoding: raw, as: UTF8.self) }
    let hex = PercentEncoding.hexValue
    var out: [UInt8] = []
    out.reserveCapacity(raw.count)
    var i = 0
    while i < raw.count {
        if raw[i] == UInt8(ascii: "%"), i + 2 < raw.count, let hi = hex(raw[i + 1]), let lo = hex(raw[i + 2]) {
            out.append(hi << 4 | lo)
            i += 3
        } else {
            out.append(raw[i])
            i += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}

private extension String {
    func leftPadded() -> String { count < 2 ? "0" + self : self }
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer, closing: Bool) -> MHD_Result {
    let mhdResponse = response.body.withUnsafeBytes { buf in
        MHD_create_response_from_buffer(buf.count, UnsafeMutableRawPointer(mutating: buf.baseAddress), MHD_ResponseMemoryMode(rawValue: 2)! /* MHD_RESPMEM_MUST_COPY */)
    }
    guard let mhdResponse else { return MHD_Result.NO }
    // `withCString`, not the implicit String-to-pointer conversion: that one copies each small
    // string (most header names, some values) into a new heap array, five allocations a
    // request for nothing (libmicrohttpd keeps copies of its own).
    for (name, value) in response.headers {
        _ = name.withCString { n in value.withCString { v in MHD_add_response_header(mhdResponse, n, v) } }
    }
    if closing { _ = MHD_add_response_header(mhdResponse, "Connection", "close") }
    let rc = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    MHD_destroy_response(mhdResponse)
    return rc
}

let mhdCompletedHandler: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
    if let connection, let record = signet_mhd_connection_context(UnsafeMutableRawPointer(connection)) {
        Unmanaged<ConnectionLimiter.Record>.fromOpaque(record).takeUnretainedValue().requestFinished()
    }
    guard let cls, let conCls, let existing = conCls.pointee else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeRetainedValue()
    if state.counted { server.requestFinished() }
    conCls.pointee = nil
}

// MARK: - Connection admission (see ConnectionLimiter)

let mhdAcceptPolicy: MHD_AcceptPolicyCallback = { cls, address, _ in
    guard let cls else { return MHD_Result.NO }
    return acceptPolicy(server: Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue(), address)
}

/// Loop mode: the daemon's context is its LoopDaemon (called by MHD_add_connection, on its loop).
let mhdLoopAcceptPolicy: MHD_AcceptPolicyCallback = { cls, address, _ in
    guard let cls, let server = Unmanaged<LoopDaemon>.fromOpaque(cls).takeUnretainedValue().server else { return MHD_Result.NO }
    return acceptPolicy(server: server, address)
}

private func acceptPolicy(server: HTTPServer, _ address: UnsafePointer<sockaddr>?) -> MHD_Result {
    var bytes = [UInt8](repeating: 0, count: 16)
    let n = bytes.withUnsafeMutableBufferPointer { signet_sockaddr_bytes(address, $0.baseAddress) }
    guard let client = bytes.withUnsafeBufferPointer({ ClientAddress(bytes: UnsafeBufferPointer(rebasing: $0[0..<n])) }) else {
        return MHD_Result.YES  // not IP (no such listener here): nothing to count by
    }
    return server.connections.admits(client) ? MHD_Result.YES : MHD_Result.NO
}

/// Started: the connection's record becomes its socket context (retained until closed).
/// Closed: called before libmicrohttpd closes the socket (the sweeper relies on that).
let mhdConnectionNotification: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let cls, let connection, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    _ = connectionNotification(server: server, connection, socketContext, code)
}

/// Loop mode: as above, and the loop's own count of connections (the acceptor's measure of
/// load) follows.
let mhdLoopConnectionNotification: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let cls, let connection, let socketContext else { return }
    let home = Unmanaged<LoopDaemon>.fromOpaque(cls).takeUnretainedValue()
    guard let server = home.server else { return }
    switch connectionNotification(server: server, connection, socketContext, code) {
    case .started: home.connectionStarted()
    case .closed: home.connectionClosed()
    case .none: break
    }
}

private enum ConnectionEvent { case started, closed, none }

private func connectionNotification(
    server: HTTPServer, _ connection: OpaquePointer, _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
    _ code: MHD_ConnectionNotificationCode
) -> ConnectionEvent {
    // MHD_CONNECTION_NOTIFY_STARTED = 0, MHD_CONNECTION_NOTIFY_CLOSED = 1 (an open C enum).
    switch code.rawValue {
    case 0:
        var bytes = [UInt8](repeating: 0, count: 16)
        let n = bytes.withUnsafeMutableBufferPointer { signet_mhd_connection_address(UnsafeMutableRawPointer(connection), $0.baseAddress) }
        let client = bytes.withUnsafeBufferPointer { ClientAddress(bytes: UnsafeBufferPointer(rebasing: $0[0..<n])) } ?? ClientAddress(value: 0)
        let record = server.connections.opened(fd: signet_mhd_connection_fd(UnsafeMutableRawPointer(connection)), address: client)
        socketContext.pointee = Unmanaged.passRetained(record).toOpaque()
        return .started
    case 1:
        // Only a connection that started has a record: each is counted closed once.
        guard let opaque = socketContext.pointee else { return .none }
        let record = Unmanaged<ConnectionLimiter.Record>.fromOpaque(opaque).takeRetainedValue()
        socketContext.pointee = nil
        server.connections.closed(record)
        return .closed
    default:
        return .none
    }
}

// MARK: - Request deadlines

/// Request timeouts of the requests that went on off their receiving thread, enforced by one
/// sweeping task (every 50 ms) instead of a sleeping task per request.
///
/// Every request of a server has the same timeout, so deadlines arrive in order: they wait in
/// a first-in, first-out queue, and a sweep takes only the due ones from its front (no scan,
/// no hashing). A request that answers in time clears its entry's action (releasing what it
/// captured); the empty entry leaves the queue when its time comes.
final class RequestDeadlines: Sendable {
    /// One request's deadline. Its action is read and cleared under the queue's lock only.
    final class Entry: @unchecked Sendable {
        // @unchecked Sendable: `fire` is touched only under RequestDeadlines' lock.
        let at: ContinuousClock.Instant
        var fire: (@Sendable () -> Void)?

        init(at: ContinuousClock.Instant, fire: @escaping @Sendable () -> Void) {
            self.at = at
            self.fire = fire
        }
    }

    private struct State {
        var queue: [Entry] = []
        /// Index of the first entry still waiting in `queue`.
        var head = 0
        var sweeper: Task<Void, Never>?
        var stopped = false
    }

    private let state = PlainLock(State())

    /// Calls `fire` at `deadline` (within a sweep interval) unless ``remove(_:)`` comes first.
    func add(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> Entry {
        let entry = Entry(at: deadline, fire: fire)
        state.withLock { s in
            s.queue.append(entry)
            if s.sweeper == nil && !s.stopped {
                s.sweeper = Task { [weak self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(50))
                        self?.sweep()
                    }
                }
            }
        }
        return entry
    }

    /// Calls `fire` after `timeout` unless ``remove(_:)`` comes first.
    func add(after timeout: Duration, _ fire: @escaping @Sendable () -> Void) -> Entry {
        add(at: ContinuousClock.now + timeout, fire)
    }

    func remove(_ entry: Entry) {
        state.withLock { _ in entry.fire = nil }
    }

    /// Entries still queued (answered ones included until their time passes).
    var count: Int { state.withLock { $0.queue.count - $0.head } }

    func stop() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.stopped = true
            let t = s.sweeper
            s.sweeper = nil
            return t
        }
        task?.cancel()
    }

    func sweep(now: ContinuousClock.Instant = .now) {
        let due = state.withLock { s -> [@Sendable () -> Void] in
            var due: [@Sendable () -> Void] = []
            // In arrival order; a later entry due before an earlier one (a server's timeout
            // does not change, so only by the clock readings of concurrent arrivals) waits for
            // it, a few microseconds at most.
            while s.head < s.queue.count, s.queue[s.head].at <= now {
                if let fire = s.queue[s.head].fire { due.append(fire) }
                s.queue[s.head].fire = nil
                s.head += 1
            }
            if s.head == s.queue.count {
                s.queue.removeAll(keepingCapacity: s.queue.capacity <= 4096)
                s.head = 0
            } else if s.head >= 1024 && s.head * 2 >= s.queue.count {
                s.queue.removeFirst(s.head)
                s.head = 0
            }
            return due
        }
        for fire in due { fire() }
    }
}
