/// Exponential backoff: the one schedule of every retry loop (the consumer's, the relay's,
/// start-up's wait for the database, the delivery retries of `RetryPolicy`).
///
/// The delay before attempt *n + 1* (after *n* failures) is nominally
/// `min(maximum, initial × factor^(n−1))`; jitter then takes away a random part of up to
/// ``jitter`` of it, so that many retries spread out instead of arriving together.
public struct Backoff: Sendable, Hashable {
    /// The first delay.
    public let initial: Duration
    /// How much each delay grows over the previous; at least 1.
    public let factor: Double
    /// The longest delay.
    public let maximum: Duration
    /// The largest fraction of a delay jitter may take away, 0…1 (0: none).
    public let jitter: Double
    /// Failures so far (0 after ``reset()``).
    public private(set) var failures = 0

    /// Out-of-range values are brought into range: factor at least 1, delays at least zero with
    /// the maximum at least the initial delay, jitter within 0…1.
    public init(initial: Duration, factor: Double = 2, maximum: Duration, jitter: Double = 0) {
        self.initial = max(.zero, initial)
        self.factor = factor.isFinite ? max(1, factor) : 1
        self.maximum = max(self.initial, maximum)
        self.jitter = jitter.isFinite ? min(1, max(0, jitter)) : 0
    }

    /// The nominal delay after `failures` failures (1-based), without jitter.
    public func nominalDelay(afterFailures failures: Int) -> Duration {
        let cap = Self.seconds(maximum)
        var seconds = Self.seconds(initial)
        // Step by step, stopping at the cap, so that large counts cannot overflow.
        var step = 1
        while step < failures, seconds < cap {
            seconds *= factor
            step += 1
        }
        return seconds >= cap ? maximum : .seconds(seconds)
    }

    /// The delay after `failures` failures, with jitter: within `nominal × (1 − jitter) … nominal`.
    public func delay(afterFailures failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let nominal = nominalDelay(afterFailures: failures)
        guard jitter > 0 else { return nominal }
        return .seconds(Self.seconds(nominal) * (1 - Double.random(in: 0...jitter, using: &generator)))
    }

    /// Counts a failure and returns the delay to wait before the next attempt.
    public mutating func next() -> Duration {
        failures += 1
        var generator = SystemRandomNumberGenerator()
        return delay(afterFailures: failures, using: &generator)
    }

    /// A success: the next failure starts from ``initial`` again.
    public mutating func reset() { failures = 0 }

    static func seconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        return Double(s) + Double(a) / 1e18
    }
}
