import Dispatch
import Synchronization

/// A fixed set of serial dispatch queues ("lanes") on which blocking libcurl transfers run,
/// so that the cooperative pool (two threads on these machines) never blocks.
///
/// A client owns one set. Each send takes the next lane in turn, which bounds the threads a
/// client can hold to the number of lanes; a send behind a slow one on the same lane waits.
final class BlockingLanes: Sendable {
    private let queues: [DispatchQueue]
    private let next = Atomic<UInt>(0)

    /// Lanes named `label.0`, `label.1`…
    ///
    /// - Parameters:
    ///   - label: The queues' label prefix, e.g. `signet.delivery.smtp`.
    ///   - count: How many lanes; at least one.
    init(label: String, count: Int) {
        queues = (0..<max(1, count)).map { DispatchQueue(label: "\(label).\($0)") }
    }

    /// Runs a blocking body on the next lane and awaits its result.
    ///
    /// Cancelling the awaiting task sets the flag passed to `body`; a body that has not
    /// started yet then does not run (cancellation before registration), and a running
    /// libcurl transfer stops at its next progress callback.
    ///
    /// - Parameter body: The blocking work; it receives the cancellation flag to hand to its
    ///   transfer.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `CancellationError` when cancelled before it started.
    func run<T: Sendable>(_ body: @escaping @Sendable (CancellationFlag) throws -> T) async throws -> T {
        let flag = CancellationFlag()
        let queue = queues[Int(next.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(queues.count))]
        return try await withTaskCancellationHandler {
            // The blocking call runs on the lane; this task only awaits the continuation.
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                queue.async {
                    if flag.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    do {
                        continuation.resume(returning: try body(flag))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            flag.cancel()
        }
    }
}
