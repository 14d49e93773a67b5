import Dispatch

/// Runs a blocking C call on a dedicated dispatch queue and awaits its result, so that the
/// cooperative pool (two threads on these machines) never blocks.
public func runBlocking<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        queue.async {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
    }
}

/// The non-throwing form of ``runBlocking(on:_:)``.
public func runBlocking<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        queue.async { continuation.resume(returning: body()) }
    }
}

import Synchronization

/// A shareable boolean flag (an `Atomic` in a class, so closures can capture it).
public final class AtomicFlag: Sendable {
    private let value: Atomic<Bool>
    public init(_ initial: Bool) { value = Atomic(initial) }
    public var isSet: Bool { value.load(ordering: .acquiring) }
    public func set(_ v: Bool) { value.store(v, ordering: .releasing) }
}

/// The string in a NUL-terminated C buffer.
public func stringFromCBuffer(_ buffer: [CChar]) -> String {
    buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
