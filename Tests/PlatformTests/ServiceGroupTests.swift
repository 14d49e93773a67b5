import Platform
import Synchronization
import Testing

/// The service group's shutdown: reverse order, a failure that stops the others, and the bound
/// on a shutdown that a service ignores. Assertions are on what completed, never on time (the
/// polling bound of `eventually` only ends a failing test).
@Suite(.timeLimit(.minutes(1))) struct ServiceGroupTests {
    static let quiet = Logger(label: "service-group-test", level: .critical)

    /// Records what happened, in order, across the services' tasks.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs until its shutdown; records both.
    struct Polite: Service {
        let name: String
        let journal: Journal
        private let stop = Wakeups()
        init(_ name: String, _ journal: Journal) {
            self.name = name
            self.journal = journal
        }
        func run() async throws {
            var waiter = stop.makeWaiter()
            await waiter.wait()
            journal.add("\(name) ended")
        }
        func shutdown() async {
            journal.add("\(name) shutdown")
            stop.finish()
        }
    }

    /// Fails as soon as it runs.
    struct Failing: Service {
        struct Failure: Error {}
        let name = "failing"
        func run() async throws {
            await Task.yield()
            throw Failure()
        }
        func shutdown() async {}
    }

    /// A service blocked in something that ignores cancellation (a blocking C call, a wait for
    /// a lease): neither its run nor its shutdown return until `release` is signalled.
    final class Deaf: Service, Sendable {
        let name = "deaf"
        private let released = Mutex<[CheckedContinuation<Void, Never>]?>([])
        func run() async throws { await parked() }
        func shutdown() async { await parked() }
        private func parked() async {
            await withCheckedContinuation { c in
                let now = released.withLock { waiting -> Bool in
                    guard waiting != nil else { return true }
                    waiting!.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
        /// Ends the parked calls (so that the test leaves no task behind).
        func release() {
            let waiting = released.withLock { w -> [CheckedContinuation<Void, Never>] in
                defer { w = nil }
                return w ?? []
            }
            waiting.forEach { $0.resume() }
        }
    }

    /// Stops only by cancellation (a retry loop that sees no shutdown, as the outbox relay did
    /// while an earlier service held the sequence).
    struct EndsOnCancellation: Service {
        let name = "cancellable"
        let journal: Journal
        func run() async throws {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            journal.add("cancellable cancelled")
        }
        func shutdown() async {}
    }

    @Test func servicesShutDownInReverseOrderAndRunReturns() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Polite("a", journal), Polite("b", journal), Polite("c", journal)], logger: Self.quiet)
        let running = Task { try await group.run() }
        group.triggerGracefulShutdown()
        try await running.value
        let shutdowns = journal.all.filter { $0.hasSuffix("shutdown") }
        #expect(shutdowns == ["c shutdown", "b shutdown", "a shutdown"])
        #expect(Set(journal.all.filter { $0.hasSuffix("ended") }) == ["a ended", "b ended", "c ended"])
    }

    @Test func aFailedServiceStopsTheOthersAndItsErrorIsThrown() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Polite("a", journal), Failing()], logger: Self.quiet)
        await #expect(throws: Failing.Failure.self) { try await group.run() }
        #expect(journal.all.contains("a ended"))
    }

    /// The shutdown sequence is held by a service deaf to cancellation; a later one stops only
    /// when cancelled. The group returns by its bound, after cancelling the latter.
    @Test func aShutdownHeldByADeafServiceEndsAtTheBound() async throws {
        let journal = Journal()
        let deaf = Deaf()
        defer { deaf.release() }
        // Shutdown order: polite, deaf (holds the sequence), cancellable (never asked).
        let group = ServiceGroup(
            services: [EndsOnCancellation(journal: journal), deaf, Polite("polite", journal)], logger: Self.quiet,
            maximumShutdownDuration: .milliseconds(300))
        let returned = AtomicFlag(false)
        let running = Task {
            defer { returned.set(true) }
            try await group.run()
        }
        group.triggerGracefulShutdown()
        #expect(await eventually { returned.isSet }, "the group outlived its maximum shutdown duration")
        if returned.isSet { try await running.value }
        #expect(journal.all.contains("polite shutdown"))
        #expect(await eventually { journal.all.contains("cancellable cancelled") }, "the services still running were not cancelled")
    }

    /// Cancelling the group's own task cancels its services and returns.
    @Test func cancellingTheGroupCancelsItsServices() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [EndsOnCancellation(journal: journal)], logger: Self.quiet)
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(20))
        running.cancel()
        try await running.value
        #expect(await eventually { journal.all.contains("cancellable cancelled") })
    }

    func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
