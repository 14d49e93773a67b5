import CMicroHTTPD
import CSignetShims
import FoundationEssentials
import Platform

/// How the server receives requests and where their handlers run.
public enum HTTPServerMode: String, Sendable {
    /// libmicrohttpd's own epoll thread pool; a handler starts inline on the receiving thread
    /// and goes on on ``BlockingExecutor/shared``'s threads when it waits or is about to block
    /// (a libpq call blocks there).
    case pool
    /// One ``EventLoop`` per receiving thread, each running its own libmicrohttpd daemon in
    /// external epoll mode on a shared port (SO_REUSEPORT). A handler's task prefers the loop
    /// that received its request: it runs there from start to end, and its libpq statements
    /// are sent without blocking and awaited on the loop's epoll set. No thread hand-off.
    case loop

    /// `SIGNET_HTTP_MODE` (`loop` when unset or unknown; ServiceConfiguration refuses unknown
    /// values at start-up). `loop` is the default since it measured ahead of `pool` in every
    /// pair (README "The request path").
    public static var fromEnvironment: HTTPServerMode {
        ProcessInfo.processInfo.environment["SIGNET_HTTP_MODE"].flatMap(HTTPServerMode.init(rawValue:)) ?? .loop
    }
}

/// One receiving thread of a server in loop mode: its event loop and its daemon. Every field
/// but `server` and `loop` is touched on the loop's thread only.
final class LoopDaemon: @unchecked Sendable {
    // @unchecked Sendable: see above; `server` is a weak reference (atomic in the runtime).
    weak var server: HTTPServer?
    let loop: EventLoop
    var daemon: OpaquePointer?
    private var watch: EventLoop.Watch?
    private var epollFD: Int32 = -1
    /// The daemon has something to do: its epoll descriptor was ready, or a connection was
    /// resumed from this thread.
    var ready = true
    /// When the daemon must run at the latest (its timeouts), nil: no limit.
    private var runAt: ContinuousClock.Instant?
    /// The listening socket taken out of service by quiescing, closed after the daemon stops.
    var quiescedListenFD: Int32 = -1

    /// The daemon is set once started (it needs this object as its context first).
    init(server: HTTPServer, loop: EventLoop) {
        self.server = server
        self.loop = loop
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
            _ = signet_mhd_run(raw)
        }
        let ms = signet_mhd_timeout_ms(raw)
        runAt = ms >= 0 ? ContinuousClock.now + .milliseconds(ms) : nil
        return Int(ms)
    }

    /// On the loop: stops accepting (see signet_mhd_quiesce_draining_backlog); returns how many
    /// queued connections were taken in.
    func quiesce() -> UInt32 {
        guard let daemon else { return 0 }
        var taken: UInt32 = 0
        quiescedListenFD = signet_mhd_quiesce_draining_backlog(UnsafeMutableRawPointer(daemon), &taken)
        ready = true
        return taken
    }

    /// On the loop: stops the daemon (closing its connections) and forgets it.
    func stopDaemon() {
        if let watch { loop.unwatch(watch, fd: epollFD) }
        watch = nil
        loop.removeBeforeWaitHooks()
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
        if quiescedListenFD >= 0 { close(quiescedListenFD) }
        quiescedListenFD = -1
    }
}

extension HTTPServer {
    /// Loop mode: starts `threads` loops, each with its daemon on the same port.
    func startLoops() throws {
        let count = max(1, configuration.threads)
        // Each daemon enforces its share of the connection limit (as libmicrohttpd's thread pool
        // does for its workers); the ConnectionLimiter counts all of them together.
        let perDaemon = UInt32((configuration.maxConnections + count - 1) / count)
        var port = UInt16(configuration.port)
        let access = unsafeBitCast(mhdLoopAccessHandler, to: UnsafeMutableRawPointer.self)
        let completed = unsafeBitCast(mhdCompletedHandler, to: UnsafeMutableRawPointer.self)
        let policy = unsafeBitCast(mhdAcceptPolicy, to: UnsafeMutableRawPointer.self)
        let notify = unsafeBitCast(mhdConnectionNotification, to: UnsafeMutableRawPointer.self)
        let cls = Unmanaged.passUnretained(self).toOpaque()
        for i in 0..<count {
            let loop = EventLoop(name: "http-loop-\(i)")
            // The LoopDaemon is the access handler's context: created first, given its daemon
            // after (the loop runs the daemon only once attach() has run on it).
            let home = LoopDaemon(server: self, loop: loop)
            let d = signet_mhd_start_external(
                port, configuration.host, perDaemon, UInt32(configuration.idleTimeoutSeconds),
                access, Unmanaged.passUnretained(home).toOpaque(), completed, cls, policy, notify, cls)
            guard let d else {
                loop.stop()
                stopLoopsAfterFailedStart()
                throw HTTPServerError(description: "could not listen on \(configuration.host):\(port)")
            }
            home.daemon = OpaquePointer(d)
            if i == 0 {
                boundPort = Int(signet_mhd_bound_port(d))
                port = UInt16(boundPort)
            }
            loopDaemons.append(home)
            loop.execute { home.attach() }
        }
        connections.start()
        logger.notice(
            "listening",
            metadata: ["signet.http.address": "\(configuration.host):\(boundPort)", "signet.http.mode": "loop", "signet.http.loops": "\(count)"])
    }

    /// Stops the loops started so far (start failed part-way).
    func stopLoopsAfterFailedStart() {
        for home in loopDaemons {
            home.loop.execute { home.stopDaemon() }
            home.loop.stop()
        }
        loopDaemons = []
        connections.stop()
    }

    /// Stops every loop's daemon from accepting; returns the queued connections taken in.
    func quiesceLoops() async -> UInt32 {
        var taken: UInt32 = 0
        for home in loopDaemons {
            taken += await home.loop.run { home.quiesce() }
        }
        return taken
    }

    /// Stops the daemons (each on its loop), then the loops.
    func stopLoops() async {
        for home in loopDaemons {
            await home.loop.run { home.stopDaemon() }
            home.loop.stop()
        }
        loopDaemons = []
    }
}
