/// The loop of a service that does one pass of work every `interval` until shutdown: waits
/// (interruptibly), runs the pass, logs a failure and goes on. Schedulers (metadata refresh,
/// transaction expiry, transient data purge) hold one.
///
/// An actor: `stopped` is its state, read by the loop and set by ``stopRunning()``, which runs
/// while the loop is suspended (waiting, or in a pass).
public actor PeriodicTask {
    public nonisolated let interval: Duration
    private let wakeups = Wakeups()
    private var stopped = false

    public init(interval: Duration) { self.interval = interval }

    /// Runs `pass` every interval until ``stopRunning()``; a failing pass is logged as `failure`.
    /// `nextWait`, when given, says how long each wait is instead (asked before each one).
    public func run(
        logger: Logger, failure: String, nextWait: (@Sendable () async -> Duration)? = nil, _ pass: @Sendable () async throws -> Void
    ) async {
        var waiter = wakeups.makeWaiter()
        while !stopped {
            await waiter.wait(timeout: await nextWait?() ?? interval)
            if stopped || Task.isCancelled { break }
            do {
                try await pass()
            } catch {
                logger.warning("\(failure)", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    /// Ends the loop (at once if it is waiting, after the pass if one is running).
    public func stopRunning() {
        stopped = true
        wakeups.finish()
    }
}
