#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization

/// A task executor of its own threads, on which blocking calls are allowed.
///
/// HTTP handlers run here (as their tasks' executor preference), so a handler's libpq call can
/// run inline on the handler's thread instead of hopping to a connection queue and back: two
/// thread wake-ups less per query. The cooperative pool (two threads here) still never blocks:
/// blocking happens on these threads only, and ``currentThreadMayBlock`` tells code where it is.
/// There are as many threads as calls that may block at once (the database pool's size), so a
/// blocked thread never keeps a runnable handler waiting for long.
public final class BlockingExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `jobs` is behind a PlainLock, `available` is a semaphore, `threads` is
    // written once in init.
    private let jobs = PlainLock<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)
    public let threadCount: Int

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
        for i in 0..<threadCount {
            let thread = Thread { [self] in
                nameCurrentThread("\(name)-\(i)")
                pthread_setspecific(Self.key, UnsafeRawPointer(bitPattern: 1))
                while true {
                    available.wait()
                    guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        jobs.withLock { $0.append(unowned) }
        available.signal()
    }
}
