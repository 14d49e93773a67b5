#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import CSignetShims
import FoundationEssentials
import Platform
import Synchronization

/// How the server receives requests and where their handlers run.
public enum HTTPServerMode: String, Sendable {
    /// libmicrohttpd's own epoll thread pool; a handler starts inline on the receiving thread
    /// and goes on on ``BlockingExecutor/shared``'s threads when it waits or is about to block
    /// (a libpq call blocks there).
    case pool
    /// One ``EventLoop`` per receiving thread, each running its own libmicrohttpd daemon in
    /// external epoll mode without a listener. The server has one listening socket, watched by
    /// loop 0, which hands each accepted connection to the loop holding the fewest
    /// (``LoopAcceptor``): `maxConnections` is one limit for all loops. A handler's task prefers
    /// the loop that received its request: it runs there from start to end, and its libpq
    /// statements are sent without blocking and awaited on the loop's epoll set. No thread
    /// hand-off.
    case loop

    /// `SIGNET_HTTP_MODE` (`loop` when unset or unknown; ServiceConfiguration refuses unknown
    /// values at start-up). `loop` is the default since it measured ahead of `pool` in every
    /// pair (README "The request path").
    public static var fromEnvironment: HTTPServerMode {
        ProcessInfo.processInfo.environment["SIGNET_HTTP_MODE"].flatMap(HTTPServerMode.init(rawValue:)) ?? .loop
    }
}

/// One receiving thread of a server in loop mode: its event loop and its daemon. Every field
/// but `server`, `loop` and the atomic counts is touched on the loop's thread only.
final class LoopDaemon: @unchecked Sendable {
    // @unchecked Sendable: see above; `server` is a weak reference (atomic in the runtime).
    weak var server: HTTPServer?
    let loop: EventLoop
    /// The loop's place among the server's loops (metrics, tests).
    let index: Int
    var daemon: OpaquePointer?
    /// The server's acceptor, told when a connection of this loop ends (set before the loop
    /// attaches; weak: the acceptor holds the loops).
    weak var acceptor: LoopAcceptor?
    private var watch: EventLoop.Watch?
    private var epollFD: Int32 = -1
    /// The daemon has something to do: its epoll descriptor was ready, or a connection was
    /// resumed or added from this thread.
    var ready = true
    /// When the daemon must run at the latest (its timeouts), nil: no limit.
    private var runAt: ContinuousClock.Instant?
    /// MHD_run is on the stack (a handler's task runs from the access handler): connections
    /// handed over now wait in `pending` until it returns, since libmicrohttpd's connection
    /// lists are not to be changed under its own iteration.
    private var inRun = false
    private var pending: [AcceptedConnection] = []
    /// Connections the daemon holds (from its start notification to its close notification).
    let open = Atomic<Int>(0)
    /// Connections handed to this loop by the acceptor and not yet added to the daemon.
    let inTransit = Atomic<Int>(0)
    private let openGauge: Gauge
    /// ``HTTPServerConfiguration/holdAfterAddForTesting``.
    private let holdAfterAdd: Duration

    /// The daemon is set once started (it needs this object as its context first).
    init(server: HTTPServer, loop: EventLoop, index: Int) {
        self.server = server
        self.loop = loop
        self.index = index
        holdAfterAdd = server.configuration.holdAfterAddForTesting
        openGauge = Gauge(label: "signet_http_loop_connections", dimensions: [("loop", "\(index)")])
    }

    /// Open connections plus those on their way here (the acceptor's measure of load).
    var connectionCount: Int {
        open.load(ordering: .sequentiallyConsistent) + inTransit.load(ordering: .sequentiallyConsistent)
    }

    /// On the loop: watches the daemon's epoll descriptor and runs the daemon before each wait.
    func attach() {
        guard let daemon else { return }
        epollFD = signet_mhd_epoll_fd(UnsafeMutableRawPointer(daemon))
        let w = loop.watch { [unowned self] mask in
            if mask != EventLoop.stopping { ready = true }
        }
        watch = w
        loop.arm(w, fd: epollFD, events: SIGNET_EPOLLIN, persistent: true)
        loop.addBeforeWait { [unowned self] in tick() }
    }

    /// Runs the daemon when it has work or a timeout passed; returns how long the loop may
    /// sleep for it.
    private func tick() -> Int {
        guard let daemon else { return -1 }
        let raw = UnsafeMutableRawPointer(daemon)
        if ready || runAt.map({ ContinuousClock.now >= $0 }) == true {
            ready = false
            inRun = true
            _ = signet_mhd_run(raw)
            inRun = false
        }
        // Connections handed over while MHD_run ran: added now, and served at once.
        while !pending.isEmpty {
            let added = pending
            pending.removeAll()
            for connection in added { addNow(connection) }
            inRun = true
            _ = signet_mhd_run(raw)
            inRun = false
        }
        let ms = signet_mhd_timeout_ms(raw)
        runAt = ms >= 0 ? ContinuousClock.now + .milliseconds(ms) : nil
        return Int(ms)
    }

    // MARK: - Connections (from the acceptor)

    /// On the loop: gives an accepted connection to the daemon (`MHD_add_connection` on the
    /// thread that runs it, as libmicrohttpd 0.9.75 requires of a daemon without an internal
    /// thread), or keeps it for after the current MHD_run.
    func add(_ connection: AcceptedConnection) {
        if inRun {
            pending.append(connection)
        } else {
            addNow(connection)
        }
    }

    private func addNow(_ connection: AcceptedConnection) {
        // Until `inTransit` drops, a connection the daemon took counts twice (its start
        // notification already added it to `open`): the acceptor, looking from loop 0 then,
        // may see the limit reached and pause with one place free (39 of 40 in CI). So the
        // acceptor is told after the drop, whatever became of the connection: if it paused,
        // it looks again (`paused` is set before it re-reads the total, and read here after
        // the drop, so one of the two sees the other).
        defer {
            inTransit.subtract(1, ordering: .sequentiallyConsistent)
            openGauge.record(connectionCount)
            acceptor?.released()
        }
        guard let daemon else {
            // Stopped meanwhile: the connection was never served.
            close(connection.fd)
            return
        }
        // The daemon checks the accept policy (per-address caps) with this address, closes the
        // socket when it refuses, and notifies the start (``connectionStarted()``) when it takes it.
        var c = connection
        // Refused or not, the acceptor is told (the defer above).
        _ = withUnsafeBytes(of: &c.address) {
            signet_mhd_add_connection(UnsafeMutableRawPointer(daemon), connection.fd, $0.baseAddress, connection.addressLength)
        }
        if holdAfterAdd > .zero { usleep(UInt32(holdAfterAdd / .microseconds(1))) }
        ready = true
        // Added after the loop's hooks ran: the daemon runs (and its timeout counts) before
        // the loop sleeps.
        loop.runHooksBeforeSleeping()
    }

    /// The daemon took a connection (its start notification, on the loop).
    func connectionStarted() {
        open.add(1, ordering: .sequentiallyConsistent)
    }

    /// A connection of the daemon ended (its close notification, on the loop).
    func connectionClosed() {
        open.subtract(1, ordering: .sequentiallyConsistent)
        openGauge.record(connectionCount)
        acceptor?.released()
    }

    /// Pending connections (handed over, not yet added); on the loop.
    var pendingCount: Int { pending.count }

    /// On the loop: stops the daemon (closing its connections) and forgets it.
    func stopDaemon() {
        if let watch { loop.unwatch(watch, fd: epollFD) }
        watch = nil
        loop.removeBeforeWaitHooks()
        for connection in pending {
            close(connection.fd)
            inTransit.subtract(1, ordering: .sequentiallyConsistent)
        }
        pending.removeAll()
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }
}

extension HTTPServer {
    /// Loop mode: one listening socket, `threads` loops, each with a daemon without a listener
    /// of its own; loop 0 accepts for all of them (``LoopAcceptor``).
    func startLoops() throws {
        let count = max(1, configuration.threads)
        var bound: UInt16 = 0
        let listenFD = signet_listen_tcp4(configuration.host, UInt16(configuration.port), Int32(SOMAXCONN), &bound)
        guard listenFD >= 0 else {
            throw HTTPServerError(description: "could not listen on \(configuration.host):\(configuration.port)")
        }
        boundPort = Int(bound)
        let access = unsafeBitCast(mhdLoopAccessHandler, to: UnsafeMutableRawPointer.self)
        let completed = unsafeBitCast(mhdCompletedHandler, to: UnsafeMutableRawPointer.self)
        let policy = unsafeBitCast(mhdLoopAcceptPolicy, to: UnsafeMutableRawPointer.self)
        let notify = unsafeBitCast(mhdLoopConnectionNotification, to: UnsafeMutableRawPointer.self)
        let cls = Unmanaged.passUnretained(self).toOpaque()
        for i in 0..<count {
            let loop = EventLoop(name: "http-loop-\(i)")
            // The LoopDaemon is the callbacks' context: created first, given its daemon after
            // (the loop runs the daemon only once attach() has run on it). Every daemon may
            // hold the whole limit: the acceptor enforces it for all of them together.
            let home = LoopDaemon(server: self, loop: loop, index: i)
            let context = Unmanaged.passUnretained(home).toOpaque()
            let d = signet_mhd_start_external(
                UInt32(configuration.maxConnections), UInt32(configuration.idleTimeoutSeconds), configuration.connectionMemoryBytes,
                access, context, completed, cls, policy, notify, context)
            guard let d else {
                loop.stop()
                close(listenFD)
                stopLoopsAfterFailedStart()
                throw HTTPServerError(description: "could not start a loop's daemon for \(configuration.host):\(boundPort)")
            }
            home.daemon = OpaquePointer(d)
            loopDaemons.append(home)
        }
        let acceptor = LoopAcceptor(listenFD: listenFD, homes: loopDaemons, limit: configuration.maxConnections)
        self.acceptor = acceptor
        for home in loopDaemons {
            home.acceptor = acceptor
            home.loop.execute { home.attach() }
        }
        acceptor.loop.execute { acceptor.attach() }
        connections.start()
        logger.notice(
            "listening",
            metadata: ["signet.http.address": "\(configuration.host):\(boundPort)", "signet.http.mode": "loop", "signet.http.loops": "\(count)"])
    }

    /// Stops the loops started so far (start failed part-way).
    func stopLoopsAfterFailedStart() {
        if let acceptor {
            acceptor.loop.execute { acceptor.stop() }
        }
        acceptor = nil
        for home in loopDaemons {
            home.loop.execute { home.stopDaemon() }
            home.loop.stop()
        }
        loopDaemons = []
        connections.stop()
    }

    /// Stops accepting: the listen backlog is taken in and handed to the loops, and the socket
    /// closed; returns when every loop has added what it was handed, with how many.
    func quiesceLoops() async -> UInt32 {
        guard let acceptor else { return 0 }
        let taken = await acceptor.loop.run { acceptor.quiesce() }
        // Hand-offs are queued to the loops before this: once each loop has no pending one,
        // the connections are the daemons' (and counted by ConnectionLimiter).
        for home in loopDaemons {
            while await home.loop.run({ home.pendingCount }) > 0 {
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        return UInt32(taken)
    }

    /// Stops the acceptor and the daemons (each on its loop), then the loops.
    func stopLoops() async {
        if let acceptor {
            await acceptor.loop.run { acceptor.stop() }
        }
        for home in loopDaemons {
            await home.loop.run { home.stopDaemon() }
            home.loop.stop()
        }
        loopDaemons = []
    }

    /// Loop mode: each loop's connections (open or on their way), in loop order; empty in pool
    /// mode. The acceptor keeps them within one of each other when connections last.
    var loopConnectionCounts: [Int] { loopDaemons.map(\.connectionCount) }
}
