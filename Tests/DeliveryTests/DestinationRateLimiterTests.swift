import Testing

@testable import Delivery

@Suite struct DestinationRateLimiterTests {
    static let fivePerTenMinutes = DestinationRateLimiter.Limit(count: 5, window: .seconds(600))
    static let start = ContinuousClock.now

    static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test func slidingWindowAllowsTheLimitThenRefusesUntilTheOldestLeaves() async {
        let limiter = DestinationRateLimiter(limit: Self.fivePerTenMinutes)
        for (index, second) in [0, 60, 120, 180, 240].enumerated() {
            #expect(await limiter.acquire("+15551234567", now: Self.at(second)) == .allowed(remaining: 4 - index))
        }
        #expect(await limiter.acquire("+15551234567", now: Self.at(300)) == .limited(retryAfter: .seconds(300)))
        #expect(await limiter.acquire("+15551234567", now: Self.at(599)) == .limited(retryAfter: .seconds(1)))
        // The send at 0 leaves the window at 600: exactly one more is allowed.
        #expect(await limiter.acquire("+15551234567", now: Self.at(600)) == .allowed(remaining: 0))
        #expect(await limiter.acquire("+15551234567", now: Self.at(610)) == .limited(retryAfter: .seconds(50)))
    }

    @Test func slidingWindowNeverAllowsMoreThanTheLimitInAnyWindow() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 3, window: .seconds(10)))
        var allowed: [Int] = []
        for second in 0..<100 where await limiter.acquire("d", now: Self.at(second)).isAllowed {
            allowed.append(second)
        }
        for second in allowed {
            #expect(allowed.filter { $0 >= second && $0 < second + 10 }.count <= 3)
        }
        #expect(allowed.count == 30)
    }

    @Test func refusedSendsAreNotCounted() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 1, window: .seconds(10)))
        #expect(await limiter.acquire("d", now: Self.at(0)).isAllowed)
        for second in 1..<10 { #expect(await !limiter.acquire("d", now: Self.at(second)).isAllowed) }
        #expect(await limiter.acquire("d", now: Self.at(10)).isAllowed)
    }

    @Test func fixedWindowResetsAtTheWindowEnd() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 2, window: .seconds(60)), strategy: .fixedWindow)
        #expect(await limiter.acquire("d", now: Self.at(0)) == .allowed(remaining: 1))
        #expect(await limiter.acquire("d", now: Self.at(50)) == .allowed(remaining: 0))
        #expect(await limiter.acquire("d", now: Self.at(59)) == .limited(retryAfter: .seconds(1)))
        #expect(await limiter.acquire("d", now: Self.at(60)) == .allowed(remaining: 1))
        #expect(await limiter.acquire("d", now: Self.at(61)) == .allowed(remaining: 0))
        #expect(await limiter.acquire("d", now: Self.at(62)) == .limited(retryAfter: .seconds(58)))
    }

    @Test func destinationsAreIndependentAndCaseInsensitive() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 1, window: .seconds(60)))
        #expect(await limiter.acquire("Alice@Example.com", now: Self.at(0)).isAllowed)
        #expect(await !limiter.acquire(" alice@example.com ", now: Self.at(1)).isAllowed)
        #expect(await limiter.acquire("bob@example.com", now: Self.at(1)).isAllowed)
        await limiter.reset("ALICE@example.com")
        #expect(await limiter.acquire("alice@example.com", now: Self.at(2)).isAllowed)
    }

    @Test(arguments: [DestinationRateLimiter.Strategy.slidingWindow, .fixedWindow])
    func memoryStaysBounded(strategy: DestinationRateLimiter.Strategy) async {
        let limiter = DestinationRateLimiter(limit: Self.fivePerTenMinutes, strategy: strategy, maximumDestinations: 64)
        for index in 0..<5_000 {
            _ = await limiter.acquire("user\(index)@example.com", now: Self.at(index / 100))
            #expect(await limiter.trackedDestinations <= 64)
        }
    }

    @Test func expiredDestinationsGoBeforeLiveOnes() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 1, window: .seconds(60)), maximumDestinations: 4)
        _ = await limiter.acquire("old1", now: Self.at(0))
        _ = await limiter.acquire("old2", now: Self.at(0))
        _ = await limiter.acquire("live1", now: Self.at(100))
        _ = await limiter.acquire("live2", now: Self.at(100))
        _ = await limiter.acquire("new", now: Self.at(110))  // at the bound: the two expired go
        #expect(await limiter.trackedDestinations == 3)
        #expect(await !limiter.acquire("live1", now: Self.at(111)).isAllowed)
        #expect(await !limiter.acquire("live2", now: Self.at(111)).isAllowed)
    }

    /// Callers on many threads at once (the actor serialises them): exactly the limit passes.
    @Test func concurrentAcquiresNeverPassTheLimit() async {
        let limiter = DestinationRateLimiter(limit: .init(count: 50, window: .seconds(600)))
        let now = ContinuousClock.now
        let allowed = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var n = 0
                    for _ in 0..<100 where await limiter.acquire("+15551234567", now: now).isAllowed { n += 1 }
                    return n
                }
            }
            return await group.reduce(0, +)
        }
        #expect(allowed == 50)
    }
}
