import Synchronization
import Testing

@testable import Delivery
import TestRandom

@Suite struct RetryPolicyTests {
    static let transient = DeliveryError(.smsUnavailable, statusCode: 503)
    static let permanent = DeliveryError(.smsRejected, statusCode: 400)

    // MARK: - Schedule

    @Test func nominalDelaysGrowExponentiallyUpToTheCap() {
        let policy = RetryPolicy(maximumAttempts: 10, baseDelay: .milliseconds(500), factor: 2, maximumDelay: .seconds(5))
        let delays = (1...8).map { policy.nominalDelay(afterAttempt: $0) }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5), .seconds(5)])
        #expect(policy.nominalDelay(afterAttempt: 10_000) == .seconds(5))
    }

    @Test(arguments: [0.0, 0.25, 0.5, 1.0])
    func jitteredDelaysStayWithinBounds(jitter: Double) {
        let policy = RetryPolicy(maximumAttempts: 8, baseDelay: .milliseconds(100), factor: 3, maximumDelay: .seconds(10), jitter: jitter)
        var generator = SplitMix64(seed: 42)
        for attempt in 1...8 {
            let nominal = policy.nominalDelay(afterAttempt: attempt)
            let lower = nominal * (1 - jitter) - .microseconds(1)
            var seen = Set<Duration>()
            for _ in 0..<200 {
                let delay = policy.delay(afterAttempt: attempt, using: &generator)
                #expect(delay >= lower && delay <= nominal + .microseconds(1))
                #expect(delay <= .seconds(10) + .microseconds(1))
                seen.insert(delay)
            }
            // With jitter the delays spread out; without it they are all the nominal one.
            #expect(jitter == 0 ? seen.count == 1 : seen.count > 100)
        }
    }

    @Test func bringsParametersIntoRange() {
        let policy = RetryPolicy(maximumAttempts: 0, baseDelay: .seconds(-1), factor: 0.5, maximumDelay: .seconds(-5), jitter: 7)
        #expect(policy.maximumAttempts == 1 && policy.baseDelay == .zero && policy.factor == 1)
        #expect(policy.maximumDelay == .zero && policy.jitter == 1)
    }

    // MARK: - Classification

    @Test func retriesOnlyTransientDeliveryErrors() {
        let policy = RetryPolicy()
        #expect(policy.isRetryable(DeliveryError(.smtpDeferred, statusCode: 451)))
        #expect(policy.isRetryable(DeliveryError(.smtpConnectFailed)))
        #expect(policy.isRetryable(DeliveryError(.smsTimeout)))
        #expect(policy.isRetryable(DeliveryError(.smsThrottled, statusCode: 429)))
        #expect(!policy.isRetryable(DeliveryError(.smtpRejected, statusCode: 550)))
        #expect(!policy.isRetryable(DeliveryError(.smsRejected, statusCode: 401)))
        #expect(!policy.isRetryable(DeliveryError(.headerInjection)))
        #expect(!policy.isRetryable(CancellationError()))
        #expect(!policy.isRetryable(SocketFailure(call: "x", errno: 1)))
    }

    // MARK: - Running

    @Test func retriesTransientFailuresUntilSuccess() async throws {
        let policy = RetryPolicy(maximumAttempts: 5, baseDelay: .milliseconds(100), factor: 2, maximumDelay: .seconds(1), jitter: 0)
        var slept: [Duration] = []
        let result = try await policy.run(sleep: { slept.append($0) }) { attempt in
            if attempt < 3 { throw Self.transient }
            return attempt
        }
        #expect(result == 3)
        #expect(slept == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func givesUpAfterTheLastAttemptWithItsError() async throws {
        let policy = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10), jitter: 0)
        var attempts = 0
        var slept = 0
        let error = await #expect(throws: DeliveryError.self) {
            try await policy.run(sleep: { _ in slept += 1 }) { _ in
                attempts += 1
                throw Self.transient
            }
        }
        #expect(error == Self.transient)
        #expect(attempts == 3 && slept == 2)
    }

    @Test func stopsAtOnceOnAPermanentFailure() async throws {
        var attempts = 0
        let error = await #expect(throws: DeliveryError.self) {
            try await RetryPolicy().run(sleep: { _ in Issue.record("must not sleep") }) { _ in
                attempts += 1
                throw Self.permanent
            }
        }
        #expect(error?.code == .smsRejected && attempts == 1)
    }

    @Test func cancellationDuringTheWaitEndsTheRun() async throws {
        let policy = RetryPolicy(maximumAttempts: 5, baseDelay: .seconds(30), jitter: 0)
        let attempts = Atomic<Int>(0)
        let task = Task {
            try await policy.run { _ in
                attempts.add(1, ordering: .relaxed)
                throw Self.transient
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(attempts.load(ordering: .relaxed) == 1)
    }
}
