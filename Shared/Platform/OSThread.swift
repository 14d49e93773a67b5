#if canImport(Glibc)
import Glibc
#endif

/// Starts a detached OS thread that runs `body` once, for the loops that must block outside
/// the cooperative pool (``BlockingExecutor``'s handler threads, the Kafka poll threads).
///
/// A plain `pthread_create` with the default attributes, as Foundation's `Thread` did before
/// it (issue 14: the services import FoundationEssentials only, so that Foundation and ICU are
/// not mapped into them, and `Thread` lives in Foundation).
///
/// - Parameters:
///   - stackSize: The thread's stack in bytes (nil: the default attributes').
///   - body: The thread's work; the thread ends when it returns.
/// - Important: Traps when the thread cannot be created (no memory or thread limit reached),
///   as `Thread.start()` did: a service without its poll or handler threads cannot run.
public func startDetachedThread(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
    var thread = pthread_t()
    let result = pthread_create(&thread, &attributes, { context in
        let body = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
        body.run()
        return nil
    }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
}

/// The closure handed through `pthread_create`'s context pointer.
private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
