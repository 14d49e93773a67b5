import Platform
import Synchronization

/// A small in-memory cache whose entries live for a fixed time, for read models consulted on
/// every request (tenants, API key digests) where a database round trip per request would
/// cost more than the work it guards.
///
/// - Important: an entry may be up to `lifetime` old. Callers choose it as the bound on how
///   long another replica's change can take to be seen here; changes made through this
///   replica call `removeAll()`.
public final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    private let entries = PlainLock<[Key: Entry]>([:])
    private let lifetime: Duration
    private let capacity: Int

    /// - Parameters:
    ///   - lifetime: how long an entry is served before it is looked up again.
    ///   - capacity: beyond this many entries the cache starts over, so that lookups of
    ///     random keys cannot grow it without bound.
    public init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The cached value for `key`, if present and not expired.
    public func value(for key: Key, now: ContinuousClock.Instant = .now) -> Value? {
        entries.withLock { e in
            guard let entry = e[key] else { return nil }
            guard entry.expires > now else {
                e[key] = nil
                return nil
            }
            return entry.value
        }
    }

    /// Stores `value` for `key` for the cache's lifetime.
    public func set(_ value: Value, for key: Key, now: ContinuousClock.Instant = .now) {
        entries.withLock { e in
            if e.count >= capacity, e[key] == nil { e.removeAll(keepingCapacity: true) }
            e[key] = Entry(value: value, expires: now + lifetime)
        }
    }

    /// Forgets every entry.
    public func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
