import HTTPServer
import Testing

@testable import AuthenticationService

/// The sign-in rate limiter: a fixed window per key, behind a `PlainLock` (a per-request check
/// on the sign-in path; see its comment for why not an actor).
@Suite struct RateLimiterTests {
    @Test func admitsTheLimitThenRefusesWithRetryAfterUntilTheWindowEnds() throws {
        let limiter = RateLimiter()
        let start = ContinuousClock.now
        for _ in 0..<3 { try limiter.admit("ip/t/1", limit: 3, per: .seconds(60), now: start) }
        do {
            try limiter.admit("ip/t/1", limit: 3, per: .seconds(60), now: start + .seconds(10))
            Issue.record("the fourth request was admitted")
        } catch let error as HTTPError {
            #expect(error.headers.contains { $0.0 == "Retry-After" && $0.1 == "50" })
        }
        try limiter.admit("ip/t/2", limit: 3, per: .seconds(60), now: start + .seconds(10))  // another key
        try limiter.admit("ip/t/1", limit: 3, per: .seconds(60), now: start + .seconds(60))  // a new window
    }

    /// Callers on many threads at once: exactly the limit is admitted.
    @Test func concurrentCallersAreAdmittedExactlyUpToTheLimit() async {
        let limiter = RateLimiter()
        let now = ContinuousClock.now
        let admitted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<500).count { _ in (try? limiter.admit("tenant/t", limit: 1000, per: .seconds(60), now: now)) != nil }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(admitted == 1000)
    }
}
