#if canImport(Glibc)
import Glibc
#endif
import CSignetShims
import FoundationEssentials

/// A thread with its own epoll set that runs Swift jobs (a `TaskExecutor`), descriptor
/// callbacks and timers, all on that one thread.
///
/// The HTTP server's loop mode (`SIGNET_HTTP_MODE=loop`) runs one libmicrohttpd daemon per
/// loop, in external epoll mode, and gives each request's handler task the loop that received
/// it as its executor preference: the handler runs on the receiving thread, and its libpq
/// statements are sent without blocking and awaited on the same epoll set
/// (`PostgresConnection`). A request costs no thread hand-off, and at most one wake-up (the
/// socket's).
///
/// - Jobs enqueued from the loop's own thread are queued without a lock or a wake-up; from any
///   other thread, under a lock, with an eventfd write only when the loop sleeps in
///   `epoll_wait` (or is about to).
/// - Descriptor watches (``watch(_:)``, ``arm(_:fd:events:)``) and timers (``schedule(at:_:)``)
///   are touched on the loop's thread only; other threads go through ``execute(_:)``.
/// - Timers are a first-in, first-out queue: the loop's timers are request deadlines of one
///   timeout each, so they arrive in order (no per-request sweep, no hashing). A timer due
///   before an earlier one fires with it.
/// - ``stop()`` ends the thread after what was queued; jobs enqueued to a stopped loop run on
///   ``BlockingExecutor/shared`` instead, so that no task is ever stranded.
public final class EventLoop: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `remote` is behind a PlainLock; every other mutable field is
    // touched on the loop's thread only (checked by `isCurrent` at the entry points).

    /// Called with the ready event mask (SIGNET_EPOLL* bits), or with ``stopping`` when the
    /// loop stops with the watch still registered.
    public typealias Handler = (UInt32) -> Void

    /// The mask a watch's handler receives when the loop stops before its descriptor was ready.
    public static let stopping: UInt32 = 1 << 31
    /// Event bits (epoll's), for ``arm(_:fd:events:persistent:)`` and handlers.
    public static let readable: UInt32 = SIGNET_EPOLLIN
    public static let writable: UInt32 = SIGNET_EPOLLOUT
    /// Error, hang-up or peer closed: the next read says which.
    public static let failed: UInt32 = SIGNET_EPOLLERR | SIGNET_EPOLLHUP | SIGNET_EPOLLRDHUP

    /// A registered descriptor callback; its token is the epoll event's data.
    public struct Watch: Sendable {
        public let token: UInt64
    }

    /// A timer; ``cancel(_:)`` releases what its action captured.
    public final class Timer: @unchecked Sendable {
        // @unchecked Sendable: `fire` is touched on the loop's thread only.
        let at: ContinuousClock.Instant
        var fire: (() -> Void)?

        init(at: ContinuousClock.Instant, fire: @escaping () -> Void) {
            self.at = at
            self.fire = fire
        }
    }

    private enum Work: @unchecked Sendable {
        // @unchecked Sendable: UnownedJob is Sendable; closures queued through execute(_:) are
        // @Sendable, and closures queued by the loop's own thread never leave it.
        case job(UnownedJob)
        case closure(() -> Void)
    }

    private struct Remote: Sendable {
        var work: [Work] = []
        /// The loop is in (or about to enter) `epoll_wait` with nothing queued: a new job must
        /// write the eventfd.
        var sleeping = false
        var stopped = false
    }

    public let name: String
    private let epfd: Int32
    private let wakeFD: Int32
    private let remote = PlainLock(Remote())

    // Loop-thread state.
    private var local: [Work] = []
    private var localHead = 0
    private var running = false
    private var stopRequested = false
    private var watches: [UInt64: Handler] = [:]
    private var nextToken: UInt64 = 1
    private var timers: [Timer] = []
    private var timerHead = 0
    /// Called before every wait; each returns how long the loop may sleep for it (ms, -1: no
    /// limit). The HTTP server runs its daemon here.
    private var beforeWait: [() -> Int] = []
    /// The hooks must run again before the loop sleeps (see ``runHooksBeforeSleeping()``).
    private var hooksAgain = false

    /// Creates the loop and starts its thread.
    public init(name: String) {
        self.name = name
        epfd = signet_epoll_create()
        wakeFD = signet_eventfd()
        precondition(epfd >= 0 && wakeFD >= 0, "epoll/eventfd unavailable")
        _ = signet_epoll_add(epfd, wakeFD, SIGNET_EPOLLIN, 0)
        // The stack of a handler task's synchronous frames: as for the cooperative pool's.
        startDetachedThread(stackSize: 1 << 20) { [self] in runThread() }
    }

    deinit {
        close(epfd)
        close(wakeFD)
    }

    /// The loop whose thread is calling, if any.
    public static var current: EventLoop? {
        guard let p = pthread_getspecific(key) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(p).takeUnretainedValue()
    }

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// Whether the calling thread is this loop's.
    public var isCurrent: Bool { pthread_getspecific(Self.key) == Unmanaged.passUnretained(self).toOpaque() }

    // MARK: - Jobs

    public func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Runs `body` on the loop's thread (later, if the caller is that thread).
    public func execute(_ body: @escaping @Sendable () -> Void) {
        submit(.closure(body))
    }

    /// Runs `body` on the loop's thread and returns its value.
    public func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        if isCurrent { return body() }
        return await withCheckedContinuation { c in execute { c.resume(returning: body()) } }
    }

    private func submit(_ work: Work) {
        if isCurrent {
            local.append(work)
            return
        }
        let action = remote.withLock { r -> (wake: Bool, stopped: Bool) in
            if r.stopped { return (false, true) }
            r.work.append(work)
            if r.sleeping {
                r.sleeping = false
                return (true, false)
            }
            return (false, false)
        }
        if action.stopped {
            // The thread has ended: jobs go on on the blocking executor's threads, closures
            // (loop bookkeeping) have nothing left to act on.
            if case .job(let job) = work { BlockingExecutor.shared.enqueueUnowned(job) }
            return
        }
        if action.wake { signet_eventfd_signal(wakeFD) }
    }

    /// Runs, on the loop's thread, every job and closure queued so far by this thread (and
    /// those they queue). The HTTP server calls it right after creating a request's task, so
    /// that a handler that does not wait answers before its connection needs suspending.
    /// Nested calls return at once (the outer call runs the work).
    public func runQueued() {
        guard isCurrent, !running else { return }
        running = true
        while localHead < local.count {
            let work = local[localHead]
            localHead += 1
            switch work {
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            case .closure(let body): body()
            }
        }
        local.removeAll(keepingCapacity: local.capacity <= 1024)
        localHead = 0
        running = false
    }

    // MARK: - Descriptors (loop thread only)

    /// Registers `handler` for descriptor events; ``arm(_:fd:events:)`` then asks for them.
    public func watch(_ handler: @escaping Handler) -> Watch {
        precondition(isCurrent)
        let token = nextToken
        nextToken += 1
        watches[token] = handler
        return Watch(token: token)
    }

    /// Asks for one event on `fd` (`events`: SIGNET_EPOLL* bits; one-shot unless `persistent`),
    /// delivered to `watch`'s handler. Returns false when epoll refuses the descriptor.
    @discardableResult
    public func arm(_ watch: Watch, fd: Int32, events: UInt32, persistent: Bool = false) -> Bool {
        precondition(isCurrent)
        return signet_epoll_arm(epfd, fd, persistent ? events : events | SIGNET_EPOLLONESHOT, watch.token) == 0
    }

    /// Forgets `watch`. A one-shot registration that already fired (or was never armed) needs
    /// nothing else; a persistent one is also removed from the epoll set (`fd`).
    public func unwatch(_ watch: Watch, fd: Int32? = nil) {
        precondition(isCurrent)
        watches[watch.token] = nil
        if let fd { _ = signet_epoll_del(epfd, fd) }
    }

    /// Adds a hook called before every wait; it returns the longest the loop may sleep (ms,
    /// -1: no limit).
    public func addBeforeWait(_ hook: @escaping () -> Int) {
        precondition(isCurrent)
        beforeWait.append(hook)
    }

    /// Makes the loop run its hooks again before it sleeps: called by loop-thread work that
    /// gives a hook something new after the hooks ran (a connection added to a daemon, whose
    /// timeout the wait must then include).
    public func runHooksBeforeSleeping() {
        precondition(isCurrent)
        hooksAgain = true
    }

    /// Removes every hook (the server that added them is stopping).
    public func removeBeforeWaitHooks() {
        precondition(isCurrent)
        beforeWait.removeAll()
    }

    // MARK: - Timers (loop thread only)

    /// Calls `fire` on the loop's thread at `deadline` unless ``cancel(_:)`` comes first.
    /// Deadlines are expected in order (see the type's documentation).
    public func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping () -> Void) -> Timer {
        precondition(isCurrent)
        let timer = Timer(at: deadline, fire: fire)
        timers.append(timer)
        return timer
    }

    /// Cancels a timer (from any thread: off the loop, the cancellation is queued to it).
    public func cancel(_ timer: Timer) {
        if isCurrent {
            timer.fire = nil
        } else {
            let t = UncheckedBox(timer)
            execute { t.value.fire = nil }
        }
    }

    /// Timers queued, fired or cancelled ones included until their time passes.
    public var pendingTimers: Int {
        precondition(isCurrent)
        return timers.count - timerHead
    }

    private func fireDueTimers(now: ContinuousClock.Instant) {
        while timerHead < timers.count, timers[timerHead].at <= now {
            let timer = timers[timerHead]
            timerHead += 1
            if let fire = timer.fire {
                timer.fire = nil
                fire()
            }
        }
        if timerHead == timers.count {
            timers.removeAll(keepingCapacity: timers.capacity <= 4096)
            timerHead = 0
        } else if timerHead >= 1024 && timerHead * 2 >= timers.count {
            timers.removeFirst(timerHead)
            timerHead = 0
        }
    }

    /// Milliseconds until the first timer, -1 when there is none.
    private func timerTimeout(now: ContinuousClock.Instant) -> Int {
        guard timerHead < timers.count else { return -1 }
        let left = timers[timerHead].at - now
        if left <= .zero { return 0 }
        let (s, atto) = left.components
        return Int(min(s * 1000 + atto / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
    }

    // MARK: - Stopping

    /// Ends the loop's thread once the work queued before this call has run. Watches still
    /// registered get ``stopping``. Later jobs run on ``BlockingExecutor/shared``.
    public func stop() {
        execute { [self] in stopRequested = true }
    }

    // MARK: - The loop

    private func runThread() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
        nameCurrentThread(name)
        var tokens = [UInt64](repeating: 0, count: 64)
        var masks = [UInt32](repeating: 0, count: 64)
        while true {
            runQueued()
            if stopRequested { break }
            var now = ContinuousClock.now
            fireDueTimers(now: now)
            var timeout = timerTimeout(now: now)
            for hook in beforeWait {
                let t = hook()
                if t >= 0 && (timeout < 0 || t < timeout) { timeout = t }
            }
            runQueued()  // what the hooks (the daemon's callbacks) queued
            if localHead < local.count || stopRequested || hooksAgain {
                hooksAgain = false
                timeout = 0
            } else {
                let queued = remote.withLock { r -> [Work] in
                    if r.work.isEmpty {
                        r.sleeping = timeout != 0
                        return []
                    }
                    let w = r.work
                    r.work.removeAll(keepingCapacity: true)
                    return w
                }
                if !queued.isEmpty {
                    local.append(contentsOf: queued)
                    timeout = 0
                }
            }
            let n = tokens.withUnsafeMutableBufferPointer { t in
                masks.withUnsafeMutableBufferPointer { m in
                    signet_epoll_wait(epfd, t.baseAddress, m.baseAddress, 64, Int32(clamping: timeout))
                }
            }
            let queued = remote.withLock { r -> [Work] in
                r.sleeping = false
                if r.work.isEmpty { return [] }
                let w = r.work
                r.work.removeAll(keepingCapacity: true)
                return w
            }
            for i in 0..<max(0, Int(n)) {
                if tokens[i] == 0 {
                    signet_eventfd_drain(wakeFD)
                } else if let handler = watches[tokens[i]] {
                    handler(masks[i])
                }
            }
            local.append(contentsOf: queued)
            now = ContinuousClock.now
            fireDueTimers(now: now)
        }
        // Stopping: watches still registered give up, then what that queued runs; from now
        // on, enqueued jobs go to the blocking executor.
        for (_, handler) in watches { handler(Self.stopping) }
        watches.removeAll()
        beforeWait.removeAll()
        runQueued()
        let leftover = remote.withLock { r -> [Work] in
            r.stopped = true
            let w = r.work
            r.work.removeAll()
            return w
        }
        local.append(contentsOf: leftover)
        runQueued()
        pthread_setspecific(Self.key, nil)
    }
}

/// Carries a value the caller knows is safe to send (used for loop-thread objects handed to
/// the loop's own thread).
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
