import Platform
import Synchronization
import Testing

/// ``EventLoop``: jobs, closures and timers on the loop's own thread; wake-ups from other
/// threads; jobs after stop on the blocking executor.
@Suite struct EventLoopTests {
    @Test func aTaskPreferringTheLoopRunsOnItsThreadBeforeAndAfterAWait() async throws {
        let loop = EventLoop(name: "test-loop")
        defer { loop.stop() }
        let (before, after) = await Task(executorPreference: loop) { () -> (Bool, Bool) in
            let before = loop.isCurrent && EventLoop.current === loop
            try? await Task.sleep(for: .milliseconds(10))  // resumed from another thread
            return (before, loop.isCurrent)
        }.value
        #expect(before)
        #expect(after)
        #expect(!loop.isCurrent && EventLoop.current == nil)
    }

    @Test func closuresFromOtherThreadsWakeTheLoop() async {
        let loop = EventLoop(name: "test-loop")
        defer { loop.stop() }
        for i in 0..<50 {
            let value = await loop.run { loop.isCurrent ? i : -1 }
            #expect(value == i)
        }
    }

    @Test func timersFireInOrderOnTheLoopAndCancelledOnesNever() async throws {
        let loop = EventLoop(name: "test-loop")
        defer { loop.stop() }
        let fired = Mutex<[Int]>([])
        let now = ContinuousClock.now
        await loop.run {
            _ = loop.schedule(at: now + .milliseconds(20)) { fired.withLock { $0.append(1) } }
            let cancelled = loop.schedule(at: now + .milliseconds(30)) { fired.withLock { $0.append(2) } }
            _ = loop.schedule(at: now + .milliseconds(40)) { fired.withLock { $0.append(loop.isCurrent ? 3 : -3) } }
            loop.cancel(cancelled)
        }
        // A condition, not a duration: the last timer's mark appears (bounded by 10 s).
        let deadline = ContinuousClock.now + .seconds(10)
        while fired.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(fired.withLock { $0 } == [1, 3])
        #expect(await loop.run { loop.pendingTimers } == 0)
    }

    @Test func jobsForAStoppedLoopRunOnTheBlockingExecutor() async throws {
        let loop = EventLoop(name: "test-loop")
        let gate = AsyncStream<Void>.makeStream()
        let task = Task(executorPreference: loop) { () -> Bool in
            for await _ in gate.stream { break }  // resumed after the loop stopped
            return BlockingExecutor.currentThreadMayBlock
        }
        try await Task.sleep(for: .milliseconds(20))
        loop.stop()
        // The stop is processed on the loop before the next closure would be.
        try await Task.sleep(for: .milliseconds(50))
        gate.continuation.yield()
        #expect(await task.value)
    }
}
