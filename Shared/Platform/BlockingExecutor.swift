#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import Synchronization

/// A task executor of its own threads, on which blocking calls are allowed.
///
/// HTTP handlers run here (as their tasks' executor preference), so a handler's libpq call can
/// run inline on the handler's thread instead of hopping to a connection queue and back: two
/// thread wake-ups less per query. The cooperative pool (two threads here) still never blocks:
/// blocking happens on these threads only, and ``currentThreadMayBlock`` tells code where it is.
/// There are up to as many threads as calls that may block at once (the database pool's
/// size), so a blocked thread never keeps a runnable job waiting for long. Threads start when
/// a job finds none idle, not before: HTTP handlers mostly run inline on the server's
/// receiving threads (``runInline(_:)``), so an idle service holds only the few its consumers
/// and background work have needed.
public final class BlockingExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `queue` is behind a PlainLock, `available` is a semaphore, the
    // other fields are constants.
    private struct Queue {
        var jobs: [UnownedJob] = []
        var head = 0
        /// Threads started, and those waiting for a job.
        var started = 0
        var idle = 0
    }

    private let queue = PlainLock(Queue())
    private let available = DispatchSemaphore(value: 0)
    /// The most threads this executor starts.
    public let threadCount: Int
    private let name: String

    /// Threads started so far.
    public var startedThreads: Int { queue.withLock { $0.started } }

    /// Whether the calling thread belongs to a `BlockingExecutor`.
    public static var currentThreadMayBlock: Bool { pthread_getspecific(Self.key) != nil }

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// The process's executor for work that may block in libpq: HTTP handlers and event
    /// consumers. `SIGNET_HANDLER_THREADS` threads (8); keep it at least the pool size.
    public static let shared = BlockingExecutor(
        threads: Int(ProcessInfo.processInfo.environment["SIGNET_HANDLER_THREADS"] ?? "") ?? 8, name: "handler")

    public init(threads: Int, name: String) {
        threadCount = max(1, threads)
        self.name = name
    }

    private func startThread(_ index: Int) {
        startDetachedThread { [self] in
            nameCurrentThread("\(name)-\(index)")
            pthread_setspecific(Self.key, UnsafeRawPointer(bitPattern: 1))
            while true {
                available.wait()
                let job = queue.withLock { q -> UnownedJob? in
                    q.idle -= 1
                    guard q.head < q.jobs.count else {
                        q.idle += 1
                        return nil
                    }
                    let job = q.jobs[q.head]
                    q.head += 1
                    if q.head == q.jobs.count {
                        q.jobs.removeAll(keepingCapacity: true)
                        q.head = 0
                    }
                    return job
                }
                guard let job else { continue }
                job.runSynchronously(on: asUnownedTaskExecutor())
                queue.withLock { $0.idle += 1 }
            }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueUnowned(UnownedJob(job))
    }

    /// Also where a stopped ``EventLoop`` sends the jobs that still arrive for it.
    func enqueueUnowned(_ unowned: UnownedJob) {
        // A job enqueued by a thread that is running this executor's jobs inline (see
        // runInline) stays on that thread: no hand-off, no wake-up.
        if let inline = InlineJobs.current, inline.owner === self {
            if !inline.leaving {
                inline.jobs.append(unowned)
                return
            }
            inline.leaving = false  // this job goes to the executor's threads (leaveReceivingThread)
        }
        // A new thread when every started one is busy (or about to be: jobs waiting outnumber
        // the idle threads), up to threadCount.
        let start = queue.withLock { q -> Int? in
            q.jobs.append(unowned)
            guard q.jobs.count - q.head > q.idle, q.started < threadCount else { return nil }
            q.started += 1
            q.idle += 1
            return q.started - 1
        }
        if let start { startThread(start) }
        available.signal()
    }

    // MARK: - Inline execution on a receiving thread

    /// Runs `start` on the calling thread, then, still on it, every job that this executor
    /// receives from the calling thread meanwhile: a task created in `start` with this
    /// executor as its preference runs on the caller until it completes or waits for
    /// something another thread will signal (a pool lease, a sleep, an actor elsewhere);
    /// from then on its jobs run on this executor's own threads as usual.
    ///
    /// The HTTP server calls this on its receiving threads, so that a request whose handler
    /// does not wait is answered on the thread that read it: no hand-off to a handler thread
    /// and back (two wake-ups and, with libmicrohttpd, a suspend/resume of the connection).
    ///
    /// The calling thread does not count as one that may block (``currentThreadMayBlock`` is
    /// false there): a job about to block (a libpq call) first moves itself to this executor's
    /// threads with ``leaveReceivingThread()``, so that a receiving thread never waits for the
    /// database while other connections it serves have requests ready (a first version that
    /// ran libpq inline there lost ceremonies/s to that head-of-line blocking), and a request
    /// timeout is always answered on time.
    ///
    /// - Important: the caller must not hold a lock that the jobs could take. Calls do not
    ///   nest: an inner call only runs `start`, and the outer call runs the jobs.
    public func runInline<T>(_ start: () -> T) -> T {
        let queue = InlineJobs.forCurrentThread()
        if queue.owner != nil { return start() }
        queue.owner = self
        let value = start()
        var next = 0
        while next < queue.jobs.count {
            let job = queue.jobs[next]
            next += 1
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
        queue.jobs.removeAll(keepingCapacity: true)
        queue.owner = nil
        queue.leaving = false
        return value
    }

    /// Whether the calling thread is running jobs inline (``runInline(_:)``).
    public static var currentThreadRunsInline: Bool { InlineJobs.current?.owner != nil }

    /// Moves the calling task from the receiving thread that runs it inline to its executor's
    /// own threads, where it may block: one hand-off, made only by a task about to block.
    /// Elsewhere it returns at once.
    public static func leaveReceivingThread() async {
        guard let inline = InlineJobs.current, inline.owner != nil else { return }
        // The yield re-enqueues this task's job on its executor from this thread; `leaving`
        // sends that one job to the executor's threads instead of this thread's inline queue.
        inline.leaving = true
        await Task.yield()
    }
}

/// The jobs a thread runs inline for ``BlockingExecutor/runInline(_:)``, one per thread that
/// ever called it (found through a thread-specific key, freed when the thread exits).
private final class InlineJobs {
    /// The executor whose jobs run inline right now; nil outside `runInline`.
    var owner: BlockingExecutor?
    /// The next job enqueued goes to the executor's threads (see leaveReceivingThread).
    var leaving = false
    var jobs: [UnownedJob] = []

    init() { jobs.reserveCapacity(8) }

    static var current: InlineJobs? {
        guard let p = pthread_getspecific(key) else { return nil }
        return Unmanaged<InlineJobs>.fromOpaque(p).takeUnretainedValue()
    }

    static func forCurrentThread() -> InlineJobs {
        if let existing = current { return existing }
        let created = InlineJobs()
        pthread_setspecific(key, Unmanaged.passRetained(created).toOpaque())
        return created
    }

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k) { p in
            if let p { Unmanaged<InlineJobs>.fromOpaque(p).release() }
        }
        return k
    }()
}
