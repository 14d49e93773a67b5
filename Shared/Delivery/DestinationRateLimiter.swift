/// Limits how many messages go to one destination (an e-mail address or a phone number) in a
/// window of time, e.g. 5 per 10 minutes, so that a one-time-code endpoint cannot be used to
/// flood someone's inbox or phone.
///
/// Two strategies:
/// - ``Strategy-swift.enum/slidingWindow`` keeps the times of the last ``Limit-swift.struct/count``
///   sends and allows a send when the oldest of them left the window: exact, never more than
///   `count` in any window.
/// - ``Strategy-swift.enum/fixedWindow`` counts sends in windows that start at a destination's
///   first send: one counter per destination, but up to twice `count` across a window edge.
///
/// Memory is bounded: at most ``maximumDestinations`` destinations are tracked, each with at
/// most `count` instants. When a new destination would pass the bound, destinations whose
/// window is over are dropped first; if that is not enough, the sixteenth of destinations used
/// least recently is dropped, which forgets their history (an attacker would need that many
/// distinct destinations within one window to reset someone's limit).
///
/// An actor: a long-lived table consulted by the delivery consumer (one message at a time, each
/// taking a vault read and an SMTP or SMS call), where one hop per message costs nothing that
/// matters. ``acquire(_:now:)`` is a dictionary lookup, except for the rare sweep at the bound.
public actor DestinationRateLimiter {
    /// How many sends a destination may have in a window.
    public struct Limit: Sendable, Hashable {
        /// Sends allowed per window; at least 1.
        public let count: Int
        /// The window; positive.
        public let window: Duration

        /// A limit of `count` sends per `window`, brought into range (count at least 1, window
        /// at least a millisecond).
        public init(count: Int, window: Duration) {
            self.count = max(1, count)
            self.window = max(.milliseconds(1), window)
        }
    }

    /// How windows are counted.
    public enum Strategy: Sendable, Hashable {
        /// Any `window`-long interval holds at most `count` sends.
        case slidingWindow
        /// Windows of `window` from a destination's first send, each holding `count` sends.
        case fixedWindow
    }

    /// Whether a send may go ahead.
    public enum Decision: Sendable, Hashable {
        /// Go ahead; it has been counted. `remaining` sends are left in the current window.
        case allowed(remaining: Int)
        /// Refused and not counted; a send may succeed after `retryAfter`.
        case limited(retryAfter: Duration)

        /// Whether the send may go ahead.
        public var isAllowed: Bool {
            if case .allowed = self { true } else { false }
        }
    }

    /// The limit applied to every destination.
    public nonisolated let limit: Limit
    /// How windows are counted.
    public nonisolated let strategy: Strategy
    /// The most destinations tracked at once.
    public nonisolated let maximumDestinations: Int
    private var state = State()

    /// A limiter.
    ///
    /// - Parameters:
    ///   - limit: Sends per window per destination, e.g. `Limit(count: 5, window: .seconds(600))`.
    ///   - strategy: Sliding (default) or fixed windows.
    ///   - maximumDestinations: The memory bound; 100 000 by default, at least 1.
    public init(limit: Limit, strategy: Strategy = .slidingWindow, maximumDestinations: Int = 100_000) {
        self.limit = limit
        self.strategy = strategy
        self.maximumDestinations = max(1, maximumDestinations)
    }

    /// Counts a send to `destination` if the limit allows it.
    ///
    /// - Parameters:
    ///   - destination: The address or number. Case and surrounding white space do not count;
    ///     otherwise callers should pass one canonical form (E.164, the address as registered).
    ///   - now: The current instant; the continuous clock's by default.
    /// - Returns: Whether the send may go ahead.
    public func acquire(_ destination: String, now: ContinuousClock.Instant = .now) -> Decision {
        state.acquire(Self.key(destination), now: now, limit: limit, strategy: strategy, maximumDestinations: maximumDestinations)
    }

    /// Forgets a destination's history, e.g. after an administrator's unblock.
    ///
    /// - Parameter destination: The address or number, as given to ``acquire(_:now:)``.
    public func reset(_ destination: String) {
        state.entries.removeValue(forKey: Self.key(destination))
    }

    /// How many destinations are tracked now.
    public var trackedDestinations: Int {
        state.entries.count
    }

    private static func key(_ destination: String) -> String {
        String(destination.trimmingWhiteSpace()).lowercased()
    }

    // MARK: - State

    /// One destination's history: its recent send instants (sliding) or its current window's
    /// start and count (fixed), and when it was last used, for eviction.
    private struct Entry {
        var instants: [ContinuousClock.Instant] = []
        var windowStart: ContinuousClock.Instant
        var windowCount = 0
        var lastUse: ContinuousClock.Instant
    }

    /// The table. Its methods decide; they do no I/O.
    private struct State {
        var entries: [String: Entry] = [:]

        mutating func acquire(
            _ key: String, now: ContinuousClock.Instant, limit: Limit, strategy: Strategy, maximumDestinations: Int
        ) -> Decision {
            if entries[key] == nil {
                if entries.count >= maximumDestinations {
                    makeRoom(now: now, limit: limit, strategy: strategy, maximumDestinations: maximumDestinations)
                }
                entries[key] = Entry(windowStart: now, lastUse: now)
            }
            // Mutate in place through the dictionary's storage, without copying the entry.
            return Self.decide(&entries[key]!, now: now, limit: limit, strategy: strategy)
        }

        private static func decide(_ entry: inout Entry, now: ContinuousClock.Instant, limit: Limit, strategy: Strategy) -> Decision {
            switch strategy {
            case .slidingWindow:
                entry.instants.removeAll { now - $0 >= limit.window }
                guard entry.instants.count < limit.count else {
                    // Instants are taken by the callers before the hop, so two of them may append
                    // slightly out of order: the oldest is the minimum, not necessarily the first.
                    let oldest = entry.instants.min() ?? now
                    return .limited(retryAfter: oldest + limit.window - now)
                }
                entry.instants.append(now)
                entry.lastUse = now
                return .allowed(remaining: limit.count - entry.instants.count)
            case .fixedWindow:
                if now - entry.windowStart >= limit.window {
                    entry.windowStart = now
                    entry.windowCount = 0
                }
                guard entry.windowCount < limit.count else {
                    return .limited(retryAfter: entry.windowStart + limit.window - now)
                }
                entry.windowCount += 1
                entry.lastUse = now
                return .allowed(remaining: limit.count - entry.windowCount)
            }
        }

        /// Drops destinations whose window is over; if still at the bound, drops the least
        /// recently used sixteenth. Amortised: a sweep frees room for many insertions.
        private mutating func makeRoom(now: ContinuousClock.Instant, limit: Limit, strategy: Strategy, maximumDestinations: Int) {
            entries = entries.filter { _, entry in
                switch strategy {
                case .slidingWindow: entry.instants.contains { now - $0 < limit.window }
                case .fixedWindow: now - entry.windowStart < limit.window
                }
            }
            guard entries.count >= maximumDestinations else { return }
            let evict = max(1, entries.count / 16)
            let oldest = entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(evict)
            for (key, _) in oldest { entries.removeValue(forKey: key) }
        }
    }
}
