import FoundationEssentials
import HTTPServer
import Platform

/// Fixed-window request counters per key (client IP, tenant), per process: a cheap first line
/// against floods of sign-in attempts. Replicas count separately, so a deployment's limit is
/// the per-replica limit times the replicas; anti-hammering (in the database) is what bounds
/// guessing against one user.
///
/// A lock, not an actor: two admissions per sign-in start, on the handler's thread. Measured
/// with `signet-bench locks` (this 2-core machine, 8 handler threads, this critical section):
/// 0.27 µs per admission behind `PlainLock` uncontended and 0.46 µs of CPU with 8 callers,
/// against 5.1 µs (8.7 µs of CPU) as a call into an actor, 6.9 µs of CPU with 8 callers — about
/// 17 µs of CPU more per sign-in start, 3 % of a ceremony's 0.55 ms. (`Synchronization.Mutex`
/// with 8 callers: 33 µs of CPU, spinning.)
final class RateLimiter: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var count: Int
    }

    private let windows = PlainLock<[String: Window]>([:])
    private let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Counts one request for `key`.
    ///
    /// - Throws: 429 `too_many_requests` with `Retry-After` once `limit` requests arrived in
    ///   the current window of `period`.
    func admit(_ key: String, limit: Int, per period: Duration, now: ContinuousClock.Instant = .now) throws {
        let retryAfter = windows.withLock { w -> Duration? in
            if w.count >= capacity { w.removeAll(keepingCapacity: true) }
            var window = w[key] ?? Window(start: now, count: 0)
            if now - window.start >= period { window = Window(start: now, count: 0) }
            window.count += 1
            w[key] = window
            return window.count > limit ? period - (now - window.start) : nil
        }
        if let retryAfter {
            let seconds = max(1, Int(retryAfter.components.seconds) + (retryAfter.components.attoseconds > 0 ? 1 : 0))
            throw HTTPError(.tooManyRequests, detail: "Too many sign-in requests; retry later.", headers: [("Retry-After", String(seconds))])
        }
    }
}
