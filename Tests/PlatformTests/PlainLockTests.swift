import Dispatch
import Foundation
import Platform
import Testing

@Suite struct PlainLockTests {
    /// Many threads, more than cores, each incrementing under the lock: no update is lost.
    @Test func updatesFromManyThreadsAreNotLost() {
        let lock = PlainLock((count: 0, perThread: [Int](repeating: 0, count: 16)))
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for _ in 0..<20_000 {
                lock.withLock {
                    $0.count += 1
                    $0.perThread[thread] += 1
                }
            }
        }
        let state = lock.withLock { $0 }
        #expect(state.count == 16 * 20_000)
        #expect(state.perThread.allSatisfy { $0 == 20_000 })
    }

    @Test func theLockIsReleasedWhenTheBodyThrows() {
        struct Failure: Error {}
        let lock = PlainLock(1)
        #expect(throws: Failure.self) { try lock.withLock { _ in throw Failure() } }
        #expect(lock.withLock { $0 } == 1)  // would deadlock if still held
    }

    @Test func threadsCanBeNamed() throws {
        let named = DispatchSemaphore(value: 0)
        let name = PlainLock("")
        let thread = Thread {
            nameCurrentThread("signet-test-thread-name")
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            name.withLock { $0 = comm.trimmingCharacters(in: .newlines) }
            named.signal()
        }
        thread.start()
        named.wait()
        #expect(name.withLock { $0 } == "signet-test-thr")  // 15 bytes, as Linux keeps
    }
}
