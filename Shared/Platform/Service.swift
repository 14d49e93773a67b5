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
/// producer flush, the database pool last.
///
/// ## The bound on a shutdown
///
/// ``run()`` returns at most `maximumShutdownDuration` after the shutdown started, whatever
/// the services do:
/// - When the sequence has not finished ``cancellationGrace`` before that bound, every service
///   task (and the sequence) is cancelled: a service that honours cancellation stops there,
///   its unfinished work left for the next start (the outbox relay's unsent rows stay in its
///   table, a consumer's uncommitted offsets are delivered again).
/// - At the bound, the group returns without the tasks that are still running (a blocking C
///   call that ignores cancellation, a `shutdown()` waiting for one), naming them in the log.
///   Its caller then ends the process, which ends them.
///
/// Each service runs in a task of its own rather than a child of a task group: a task group
/// waits for every child before it returns, so one service deaf to cancellation would hold the
/// process until SIGKILL (as the outbox relay did with PostgreSQL gone during a drain).
public final class ServiceGroup: @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable and Sendable (Logger, the stream).
    private let services: [any Service]
    private let logger: Logger
    private let maximumShutdownDuration: Duration
    private let events: AsyncStream<Event>
    private let eventsContinuation: AsyncStream<Event>.Continuation

    /// - Parameter maximumShutdownDuration: the bound on a shutdown, from its start to the
    ///   return of ``run()`` (see the type's description).
    public init(services: [any Service], logger: Logger, maximumShutdownDuration: Duration = .seconds(25)) {
        self.services = services
        self.logger = logger
        self.maximumShutdownDuration = maximumShutdownDuration
        (events, eventsContinuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// How long before the bound the services are cancelled: a fifth of the bound, at most 1 s
    /// (what a service that honours cancellation needs to unwind and log).
    public var cancellationGrace: Duration { min(.seconds(1), maximumShutdownDuration / 5) }

    /// Requests a graceful shutdown, as a signal would.
    public func triggerGracefulShutdown(reason: String = "requested") {
        eventsContinuation.yield(.trigger(reason))
    }

    /// What the group's loop reacts to, in the order it happened.
    private enum Event: Sendable {
        /// A signal, a request, or a failed service: the shutdown starts (once).
        case trigger(String)
        /// A service's `run()` returned, with its error if it failed.
        case serviceEnded(index: Int, error: (any Error)?)
        /// Every service's `shutdown()` has returned.
        case shutdownSequenceEnded
        /// The bound less ``cancellationGrace`` has passed.
        case cancelNow
        /// The bound has passed.
        case boundReached
    }

    /// Runs every service until a signal or a failure, then shuts them down in reverse order.
    ///
    /// - Throws: the first error a service's `run()` threw (cancellation aside).
    public func run() async throws {
        let signals = subscribeToSignals()
        defer { SignalTrap.shared.unsubscribe(signals) }
        let services = self.services
        let logger = self.logger
        let continuation = self.eventsContinuation
        var tasks: [Task<Void, Never>] = []
        for (index, service) in services.enumerated() {
            tasks.append(
                Task {
                    do {
                        try await service.run()
                        continuation.yield(.serviceEnded(index: index, error: nil))
                    } catch is CancellationError {
                        continuation.yield(.serviceEnded(index: index, error: nil))
                    } catch {
                        logger.error("service failed", metadata: [LogKey.service: "\(service.name)", LogKey.error: "\(error)"])
                        continuation.yield(.trigger("service \(service.name) failed"))
                        continuation.yield(.serviceEnded(index: index, error: error))
                    }
                })
        }
        var running = Set(services.indices)
        var shuttingDown = false
        var sequenceEnded = false
        var firstError: (any Error)?
        var sequence: Task<Void, Never>?
        var timers: [Task<Void, Never>] = []
        defer { timers.forEach { $0.cancel() } }
        func stillRunning() -> String { running.sorted().map { services[$0].name }.joined(separator: ",") }
        // The stream ends when this task is cancelled: then the services are cancelled too.
        for await event in events {
            switch event {
            case .trigger(let reason):
                guard !shuttingDown else { continue }
                shuttingDown = true
                logger.notice("graceful shutdown started", metadata: ["signet.reason": "\(reason)"])
                sequence = Task {
                    for service in services.reversed() {
                        await service.shutdown()
                        logger.info("service stopped", metadata: [LogKey.service: "\(service.name)"])
                    }
                    continuation.yield(.shutdownSequenceEnded)
                }
                for (delay, event) in [(maximumShutdownDuration - cancellationGrace, Event.cancelNow), (maximumShutdownDuration, .boundReached)] {
                    timers.append(
                        Task {
                            try? await Task.sleep(for: delay)
                            if !Task.isCancelled { continuation.yield(event) }
                        })
                }
            case .serviceEnded(let index, let error):
                running.remove(index)
                if firstError == nil, let error { firstError = error }
            case .shutdownSequenceEnded:
                sequenceEnded = true
            case .cancelNow:
                logger.error("graceful shutdown exceeded its maximum duration; cancelling", metadata: ["signet.services.running": .string(stillRunning())])
                sequence?.cancel()
                tasks.forEach { $0.cancel() }
            case .boundReached:
                // Listed: the services whose run() has not returned; the sequence is the
                // shutdown() calls, one of which may be what holds the shutdown.
                logger.error(
                    "graceful shutdown reached its bound; returning without what has not stopped",
                    metadata: ["signet.services.running": .string(stillRunning()), "signet.shutdown.sequence_ended": .string(String(sequenceEnded))])
            }
            if case .boundReached = event { break }
            if shuttingDown && sequenceEnded && running.isEmpty { break }
        }
        if Task.isCancelled {
            sequence?.cancel()
            tasks.forEach { $0.cancel() }
        }
        logger.notice("graceful shutdown finished")
        if let firstError { throw firstError }
    }

    /// SIGTERM and SIGINT through ``SignalTrap`` (installed synchronously, nothing lost between
    /// installing and reading); until the group's run returns.
    private func subscribeToSignals() -> UInt64 {
        let continuation = eventsContinuation
        SignalTrap.install()
        return SignalTrap.shared.subscribe { continuation.yield(.trigger($0)) }
    }
}
