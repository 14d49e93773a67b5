import Platform

/// When to try a failed delivery again: exponential backoff with jitter, a cap on the delay and
/// on the number of attempts, and a rule for which errors are worth another attempt.
///
/// The delay before attempt *n + 1* (after attempt *n* failed) is nominally
/// `min(maximumDelay, baseDelay × factor^(n−1))`; jitter then takes away a random part of up to
/// ``jitter`` of it, so that the retries of many failed sends spread out instead of arriving
/// together. With the defaults (4 attempts, 0.5 s, ×2, 30 s cap, jitter 0.5) the three waits are
/// 0.25–0.5 s, 0.5–1 s and 1–2 s.
///
/// Only transient failures are retried (``isRetryable(_:)``): a ``DeliveryError`` whose
/// ``DeliveryError/isTransient`` is true. Permanent ones (SMTP 5xx, HTTP 4xx, invalid input),
/// cancellation and unknown errors end the run at once.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included; at least 1.
    public let maximumAttempts: Int
    /// The nominal delay after the first failed attempt.
    public let baseDelay: Duration
    /// How much each nominal delay grows over the previous; at least 1.
    public let factor: Double
    /// The longest nominal delay.
    public let maximumDelay: Duration
    /// The largest fraction of a nominal delay that jitter may take away, 0…1: 0 is no jitter,
    /// 1 is "full jitter" (anything from zero to the nominal delay).
    public let jitter: Double

    /// A policy. Out-of-range values are brought into range rather than refused: attempts
    /// and factor at least 1, delays at least zero with the maximum at least the base, jitter
    /// within 0…1.
    ///
    /// - Parameters:
    ///   - maximumAttempts: Attempts in all; 4 by default.
    ///   - baseDelay: The first delay; 0.5 s by default.
    ///   - factor: Growth per attempt; 2 by default.
    ///   - maximumDelay: The cap; 30 s by default.
    ///   - jitter: The random fraction; 0.5 by default.
    public init(
        maximumAttempts: Int = 4, baseDelay: Duration = .milliseconds(500), factor: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = max(.zero, baseDelay)
        self.factor = factor.isFinite ? max(1, factor) : 1
        self.maximumDelay = max(self.baseDelay, maximumDelay)
        self.jitter = jitter.isFinite ? min(1, max(0, jitter)) : 0
    }

    /// One attempt, no retry.
    public static let none = RetryPolicy(maximumAttempts: 1)

    // MARK: - Schedule

    /// The schedule (Platform's ``Backoff``, shared by every retry loop).
    public var backoff: Backoff { Backoff(initial: baseDelay, factor: factor, maximum: maximumDelay, jitter: jitter) }

    /// The delay before the next attempt when attempt `attempt` (1-based) failed, without
    /// jitter: `min(maximumDelay, baseDelay × factor^(attempt−1))`.
    ///
    /// - Parameter attempt: The attempt that failed, from 1.
    public func nominalDelay(afterAttempt attempt: Int) -> Duration { backoff.nominalDelay(afterFailures: attempt) }

    /// The delay before the next attempt when attempt `attempt` failed, with jitter: a value in
    /// `nominal × (1 − jitter) … nominal`.
    ///
    /// - Parameters:
    ///   - attempt: The attempt that failed, from 1.
    ///   - generator: The source of randomness.
    public func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        backoff.delay(afterFailures: attempt, using: &generator)
    }

    /// ``delay(afterAttempt:using:)`` with the system's random number generator.
    ///
    /// - Parameter attempt: The attempt that failed, from 1.
    public func delay(afterAttempt attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &generator)
    }

    // MARK: - Classification

    /// Whether another attempt may succeed after `error`: true for a transient
    /// ``DeliveryError`` only.
    ///
    /// - Parameter error: What the failed attempt threw.
    public func isRetryable(_ error: any Error) -> Bool {
        (error as? DeliveryError)?.isTransient ?? false
    }

    // MARK: - Running

    /// Runs `operation` until it succeeds, throws a permanent error, or ``maximumAttempts``
    /// have been made, sleeping ``delay(afterAttempt:)`` between attempts.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor, inherited so that `operation` need not be Sendable.
    ///   - operation: One attempt; it receives the attempt number, from 1.
    /// - Returns: The first successful result.
    /// - Throws: The last attempt's error, the first permanent error, or `CancellationError`
    ///   when the task is cancelled while waiting.
    public func run<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ operation: (_ attempt: Int) async throws -> T
    ) async throws -> T {
        try await run(isolation: isolation, sleep: { try await Task.sleep(for: $0) }, operation)
    }

    /// ``run(isolation:_:)`` with the sleep function given, for tests that record the delays
    /// instead of waiting them out.
    func run<T>(
        isolation: isolated (any Actor)? = #isolation,
        sleep: (Duration) async throws -> Void,
        _ operation: (_ attempt: Int) async throws -> T
    ) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await operation(attempt)
            } catch {
                guard attempt < maximumAttempts, isRetryable(error) else { throw error }
                try await sleep(delay(afterAttempt: attempt))
                attempt += 1
            }
        }
    }
}
