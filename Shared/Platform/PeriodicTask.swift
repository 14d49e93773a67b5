import Foundation

/// The loop of a service that does one pass of work every `interval` until shutdown: waits
/// (interruptibly), runs the pass, logs a failure and goes on. Schedulers (metadata refresh,
/// transaction expiry, transient data purge) hold one.
public final class PeriodicTask: Sendable {
    private let stop = AsyncSignal()
    private let stopped = AtomicFlag(false)
    public let interval: Duration

    public init(interval: Duration) { self.interval = interval }

    /// Runs `pass` every interval until ``stop()``; a failing pass is logged as `failure`.
    public func run(logger: Logger, failure: String, _ pass: @Sendable () async throws -> Void) async {
        while !stopped.isSet {
            await stop.wait(timeout: interval)
            if stopped.isSet || Task.isCancelled { break }
            do {
                try await pass()
            } catch {
                logger.warning("\(failure)", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    /// Ends the loop (at once if it is waiting, after the pass if one is running).
    public func stopRunning() {
        stopped.set(true)
        stop.signal()
    }
}
