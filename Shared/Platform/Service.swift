import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A long-running part of a process, shaped like swift-service-lifecycle's `Service`.
///
/// `run()` does the work until `shutdown()` asks it to stop gracefully; it then finishes what
/// is in flight and returns.
public protocol Service: Sendable {
    /// A short name for logs.
    var name: String { get }
    /// Runs until shutdown is requested; returns when the service has stopped.
    func run() async throws
    /// Asks the service to stop gracefully; returns when it has stopped accepting work.
    func shutdown() async
}

/// Runs services together and shuts them down gracefully on SIGTERM or SIGINT.
///
/// Services start in the order given and shut down in reverse order, each awaited before the
/// next: HTTP first (in-flight requests finish), then consumers, then the outbox relay and the
/// producer flush, the database pool last. A shutdown that takes longer than
/// `maximumShutdownDuration` ends the process's services by cancellation.
public final class ServiceGroup: @unchecked Sendable {
    // @unchecked Sendable: `signalSources` is written once, by run(), before any signal can
    // arrive; every other stored property is immutable and Sendable.
    private let services: [any Service]
    private let logger: Logger
    private let maximumShutdownDuration: Duration
    private let trigger: AsyncStream<String>
    private let triggerContinuation: AsyncStream<String>.Continuation
    private var signalSources: [any DispatchSourceSignal] = []

    public init(services: [any Service], logger: Logger, maximumShutdownDuration: Duration = .seconds(25)) {
        self.services = services
        self.logger = logger
        self.maximumShutdownDuration = maximumShutdownDuration
        (trigger, triggerContinuation) = AsyncStream.makeStream(of: String.self)
    }

    /// Requests a graceful shutdown, as a signal would.
    public func triggerGracefulShutdown(reason: String = "requested") {
        triggerContinuation.yield(reason)
    }

    private enum ChildResult: Sendable { case service, shutdownSequence, deadline }

    /// Runs every service until a signal or a failure, then shuts them down in reverse order.
    public func run() async throws {
        installSignalHandlers()
        let services = self.services
        let logger = self.logger
        let trigger = self.trigger
        let continuation = self.triggerContinuation
        let maxDuration = maximumShutdownDuration
        try await withThrowingTaskGroup(of: ChildResult.self) { group in
            for service in services {
                group.addTask {
                    do {
                        try await service.run()
                    } catch is CancellationError {
                    } catch {
                        logger.error("service failed", metadata: [LogKey.service: "\(service.name)", LogKey.error: "\(error)"])
                        continuation.yield("service \(service.name) failed")
                        throw error
                    }
                    return .service
                }
            }
            // Wait for the first trigger: a signal, a failed service, or a request.
            var reason = "requested"
            for await r in trigger {
                reason = r
                break
            }
            logger.notice("graceful shutdown started", metadata: ["signet.reason": "\(reason)"])
            group.addTask {
                for service in services.reversed() {
                    await service.shutdown()
                    logger.info("service stopped", metadata: [LogKey.service: "\(service.name)"])
                }
                return .shutdownSequence
            }
            group.addTask {
                try await Task.sleep(for: maxDuration)
                return .deadline
            }
            var remaining = services.count + 1
            var firstError: (any Error)?
            while remaining > 0, let result = await group.nextResult() {
                switch result {
                case .success(.deadline):
                    logger.error("graceful shutdown exceeded its maximum duration; cancelling")
                    group.cancelAll()
                case .success:
                    remaining -= 1
                case .failure(let e):
                    remaining -= 1
                    if firstError == nil, !(e is CancellationError) { firstError = e }
                }
            }
            group.cancelAll()
            logger.notice("graceful shutdown finished")
            if let firstError { throw firstError }
        }
    }

    private func installSignalHandlers() {
        let continuation = triggerContinuation
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            let name = sig == SIGTERM ? "SIGTERM" : "SIGINT"
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        signalSources = sources
    }
}
