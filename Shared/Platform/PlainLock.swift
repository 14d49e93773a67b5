#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a plain pthread mutex, for state touched on every request by many
/// threads (caches, metrics, the handler queue, the connection pool).
///
/// `Synchronization.Mutex` on Linux spins up to a thousand times and then blocks on a
/// priority-inheritance futex (`FUTEX_LOCK_PI`): on a machine with fewer cores than threads the
/// spinning burns the very CPU the lock holder needs, and the PI futex is the kernel's most
/// expensive lock path. glibc's default mutex blocks on a plain futex without spinning.
///
/// The value never leaves the lock except as a copy returned by `withLock`.
public final class PlainLock<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written between lock and unlock of `mutex`,
    // which lives at a stable address for the lock's lifetime.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, under the lock.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
