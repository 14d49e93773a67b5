import Synchronization

/// A wake-up signal for one or more waiting tasks: `signal()` wakes every current waiter, or
/// the next one to wait when none is waiting. Cancellation ends a wait.
public final class AsyncSignal: Sendable {
    private struct State {
        var pending = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiters (or leaves the signal pending for the next wait).
    public func signal() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            if s.waiters.isEmpty {
                s.pending = true
                return []
            }
            let w = Array(s.waiters.values)
            s.waiters.removeAll()
            return w
        }
        for w in waiters { w.resume() }
    }

    /// Waits for a signal, or returns after `timeout`, or on cancellation.
    public func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Waits for a signal, or until the task is cancelled.
    public func wait() async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending {
                        s.pending = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { $0.waiters.removeValue(forKey: id) }
            c?.resume()
        }
    }
}
