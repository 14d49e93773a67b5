#if canImport(Glibc)
import Glibc
#endif
import CSignetShims
import FoundationEssentials
import Platform
import Synchronization

/// A connection taken from the listen queue, on its way to a loop's daemon.
struct AcceptedConnection: Sendable {
    let fd: Int32
    /// The peer's `struct sockaddr` (an IPv4 or IPv6 one: 28 bytes at most) and its length.
    var address: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    var addressLength: UInt32 = 0

    init(fd: Int32) { self.fd = fd }
}

/// Loop mode's one listening socket per server, watched by loop 0, which hands each accepted
/// connection to the loop holding the fewest (ties: the next in turn), whose daemon adds it
/// (``LoopDaemon/add(_:)``).
///
/// Why one listener: when every loop's daemon listened on the port (SO_REUSEPORT), the kernel
/// spread connections by hash and each daemon enforced its share of the limit, so the whole
/// `maxConnections` could not be reached (39 of 40 in CI: one daemon refused while the other
/// had room), and loops kept whatever the hash gave them.
///
/// - **The limit is global**: with `maxConnections` open or on their way (every loop's
///   ``LoopDaemon/connectionCount`` together), loop 0 stops watching the listening socket, so
///   newcomers wait in the kernel's backlog, as libmicrohttpd's own listener does at its
///   limit; a connection's end (``released()``) resumes it.
/// - **Per-address caps and ACLs** stay with the daemon: `MHD_add_connection` runs the accept
///   policy with the peer address given here, which is also the connection's client address.
/// - **Quiescing** (``quiesce()``) stops watching, takes every queued connection in (to the
///   loops, as above) and only then closes the socket: closing a socket with a backlog resets
///   those connections, which a client cannot tell from a failure after processing.
///
/// Every field but `paused` is touched on loop 0's thread only.
final class LoopAcceptor: @unchecked Sendable {
    // @unchecked Sendable: see above; `homes` and `limit` are constants.
    private let homes: [LoopDaemon]
    private let limit: Int
    private var listenFD: Int32
    private var watch: EventLoop.Watch?
    /// Where the search for the least loaded loop starts: ties go round.
    private var next = 0
    /// Loop 0 stopped watching at the limit; set on loop 0, cleared there, read by any loop.
    private let paused = Atomic<Bool>(false)
    private var stopped = false
    private let refused: Counter

    /// The loop that watches the listening socket.
    var loop: EventLoop { homes[0].loop }

    init(listenFD: Int32, homes: [LoopDaemon], limit: Int) {
        self.listenFD = listenFD
        self.homes = homes
        self.limit = max(1, limit)
        refused = Counter(label: "signet_http_connections_refused_total", dimensions: [("listener", "main"), ("reason", "accept_failed")])
    }

    /// Open connections plus those on their way to a loop, every loop together.
    private var total: Int { homes.reduce(0) { $0 + $1.connectionCount } }

    /// On loop 0: starts watching the listening socket.
    func attach() {
        guard !stopped, listenFD >= 0 else { return }
        let w = loop.watch { [unowned self] mask in
            if mask != EventLoop.stopping { acceptReady() }
        }
        watch = w
        loop.arm(w, fd: listenFD, events: EventLoop.readable, persistent: true)
    }

    /// On loop 0: takes queued connections while there is room (a bounded batch per wake-up,
    /// so the loop serves its own connections in between; the watch is level-triggered).
    private func acceptReady() {
        for _ in 0..<64 {
            if total >= limit {
                pause()
                return
            }
            guard let connection = acceptOne() else { return }
            handOver(connection)
        }
    }

    /// The next queued connection, nil when none is (or accept failed: out of descriptors
    /// pauses until a connection ends, as libmicrohttpd does).
    private func acceptOne() -> AcceptedConnection? {
        var c = AcceptedConnection(fd: -1)
        var length = UInt32(MemoryLayout.size(ofValue: c.address))
        let fd = withUnsafeMutableBytes(of: &c.address) { signet_accept(listenFD, $0.baseAddress, &length) }
        if fd < 0 {
            let e = errno
            if e != EAGAIN && e != EWOULDBLOCK {
                refused.increment()
                // EMFILE/ENFILE/ENOBUFS/ENOMEM: wait for a connection to end rather than spin
                // on a level-triggered socket (with none open, keep trying).
                if total > 0 { pause() }
            }
            return nil
        }
        var accepted = AcceptedConnection(fd: fd)
        accepted.address = c.address
        accepted.addressLength = length
        return accepted
    }

    /// Gives `connection` to the loop with the fewest connections.
    private func handOver(_ connection: AcceptedConnection) {
        let n = homes.count
        var best = next % n
        var fewest = Int.max
        for k in 0..<n {
            let i = (next + k) % n
            let count = homes[i].connectionCount
            if count < fewest {
                fewest = count
                best = i
            }
        }
        next = (best + 1) % n
        let home = homes[best]
        home.inTransit.add(1, ordering: .sequentiallyConsistent)
        if home.loop.isCurrent {
            home.add(connection)
        } else {
            home.loop.execute { home.add(connection) }
        }
    }

    // MARK: - The limit

    /// On loop 0: stops watching until a connection ends.
    private func pause() {
        guard let watch, !paused.load(ordering: .sequentiallyConsistent) else { return }
        loop.arm(watch, fd: listenFD, events: 0, persistent: true)
        paused.store(true, ordering: .sequentiallyConsistent)
        // A connection that ended before `paused` was set did not see it: look again.
        if total < limit { resumeIfRoom() }
    }

    /// A connection ended or was refused (on any loop): resumes accepting if loop 0 paused.
    func released() {
        guard paused.load(ordering: .sequentiallyConsistent) else { return }
        loop.execute { [self] in resumeIfRoom() }
    }

    /// On loop 0.
    private func resumeIfRoom() {
        guard !stopped, let watch, paused.load(ordering: .sequentiallyConsistent), total < limit else { return }
        paused.store(false, ordering: .sequentiallyConsistent)
        loop.arm(watch, fd: listenFD, events: EventLoop.readable, persistent: true)
    }

    // MARK: - Stopping

    /// On loop 0: stops accepting; the connections queued in the backlog are taken in and
    /// handed to the loops (within the limit; past it they are closed, as a daemon at its limit
    /// did), then the socket is closed. Returns how many were handed over. What arrives
    /// between the last accept and the close is the only loss (microseconds).
    func quiesce() -> Int {
        guard !stopped else { return 0 }
        stopWatching()
        var taken = 0
        while taken < 4096, let connection = acceptOne() {
            if total >= limit {
                close(connection.fd)
                continue
            }
            handOver(connection)
            taken += 1
        }
        stop()
        return taken
    }

    /// On loop 0 (or before the loop ever ran it): stops watching and closes the socket.
    func stop() {
        stopWatching()
        stopped = true
        if listenFD >= 0 { close(listenFD) }
        listenFD = -1
    }

    private func stopWatching() {
        if let watch, listenFD >= 0 { loop.unwatch(watch, fd: listenFD) }
        watch = nil
    }
}
