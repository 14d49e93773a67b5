import Dispatch
import Foundation
import Platform
import Testing

@Suite struct BlockingExecutorTests {
    /// Runs `body` on a new plain thread (as libmicrohttpd's would be) and waits for it.
    func onPlainThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in
            Thread.detachNewThread { c.resume(returning: body()) }
        }
    }

    /// A task that does not wait runs to completion on the calling thread, inside runInline,
    /// where blocking is not allowed; the executor starts no thread for it.
    @Test func aTaskThatDoesNotWaitCompletesInline() async {
        let executor = BlockingExecutor(threads: 2, name: "bx-inline")
        let result = await onPlainThread { () -> (onCaller: Bool, mayBlock: Bool, runsInline: Bool, after: Bool) in
            let done = PlainLock<(Bool, Bool, Bool)?>(nil)
            let caller = pthread_self()
            _ = executor.runInline {
                Task(executorPreference: executor) {
                    await Task.yield()  // re-enqueued: still on the caller
                    done.withLock {
                        $0 = (pthread_equal(pthread_self(), caller) != 0, BlockingExecutor.currentThreadMayBlock, BlockingExecutor.currentThreadRunsInline)
                    }
                }
            }
            let inline = done.withLock { $0 }
            return (inline?.0 == true, inline?.1 ?? true, inline?.2 ?? false, BlockingExecutor.currentThreadRunsInline)
        }
        #expect(result.onCaller && result.runsInline)
        #expect(!result.mayBlock)  // a receiving thread never blocks
        #expect(!result.after)
        #expect(executor.startedThreads == 0)
    }

    /// A task about to block leaves the receiving thread for the executor's threads, where it
    /// may block; the receiving thread's runInline returns without waiting for it.
    @Test func aTaskAboutToBlockLeavesTheReceivingThread() async {
        let executor = BlockingExecutor(threads: 2, name: "bx-leave")
        let task = await onPlainThread { () -> Task<(Bool, Bool, Bool), Never> in
            let caller = pthread_self()
            let release = DispatchSemaphore(value: 0)
            let task = executor.runInline {
                Task(executorPreference: executor) { () -> (Bool, Bool, Bool) in
                    await BlockingExecutor.leaveReceivingThread()
                    // Blocks until the caller, once runInline has returned, signals: had the
                    // task stayed on the caller, this would time out instead.
                    let released = release.wait(timeout: .now() + 5) == .success
                    return (pthread_equal(pthread_self(), caller) == 0, BlockingExecutor.currentThreadMayBlock, released)
                }
            }
            release.signal()
            return task
        }
        let (moved, mayBlock, released) = await task.value
        #expect(moved && mayBlock && released)
        #expect(executor.startedThreads >= 1)
    }

    /// A task that waits for another thread leaves the caller and finishes on the executor's
    /// own threads, started on demand.
    @Test func aTaskThatWaitsGoesOnOnTheExecutorsThreads() async throws {
        let executor = BlockingExecutor(threads: 2, name: "bx-wait")
        let task = await onPlainThread {
            executor.runInline {
                Task(executorPreference: executor) { () -> Bool in
                    try? await Task.sleep(for: .milliseconds(20))
                    return BlockingExecutor.currentThreadMayBlock
                }
            }
        }
        #expect(await task.value)
        #expect(executor.startedThreads >= 1 && executor.startedThreads <= 2)
    }

    /// Many jobs from outside: never more threads than the bound.
    @Test func threadsStartOnDemandUpToTheBound() async {
        let executor = BlockingExecutor(threads: 3, name: "bx-bound")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask(executorPreference: executor) { usleep(1000) }
            }
        }
        #expect(executor.startedThreads <= 3 && executor.startedThreads >= 1)
    }
}
