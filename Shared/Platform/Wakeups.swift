/// Wake-ups for one waiting loop (a relay, a schedule): ``signal()`` is synchronous, cheap and
/// callable from any thread (a request handler, a C callback); the loop's ``Waiter`` wakes once
/// for any number of signals sent since it last woke (an `AsyncStream` buffering one element),
/// so a burst of signals costs the loop one turn.
///
/// ``finish()`` ends the stream: every later wait returns at once. Cancelling the waiting task
/// does too (an `AsyncStream` ends when its consumer is cancelled).
public struct Wakeups: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Wakes the waiter, or the next wait when it is busy (signals in between coalesce).
    public func signal() { continuation.yield() }

    /// Ends the stream: the waiter wakes now and every later wait returns at once.
    public func finish() { continuation.finish() }

    /// The one consumer. Make it once, in the loop that waits (an `AsyncStream` has a single
    /// consumer).
    public func makeWaiter() -> Waiter { Waiter(iterator: stream.makeAsyncIterator(), continuation: continuation) }

    /// The waiting side, owned by one loop.
    public struct Waiter {
        private var iterator: AsyncStream<Void>.Iterator
        private let continuation: AsyncStream<Void>.Continuation

        fileprivate init(iterator: AsyncStream<Void>.Iterator, continuation: AsyncStream<Void>.Continuation) {
            self.iterator = iterator
            self.continuation = continuation
        }

        /// Waits for a signal; false when the stream has ended (finished, or the task cancelled).
        @discardableResult
        public mutating func wait(isolation: isolated (any Actor)? = #isolation) async -> Bool {
            await iterator.next(isolation: isolation) != nil
        }

        /// Waits for a signal or until `timeout` has passed; false when the stream has ended.
        ///
        /// The timeout is a signal sent by a timer task, cancelled once the wait is over; a
        /// timer that fires just as a signal arrives leaves one wake-up pending, which costs
        /// the loop one spare turn, never a missed one.
        @discardableResult
        public mutating func wait(timeout: Duration, isolation: isolated (any Actor)? = #isolation) async -> Bool {
            let timer = Task { [continuation] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { continuation.yield() }
            }
            defer { timer.cancel() }
            return await iterator.next(isolation: isolation) != nil
        }
    }
}
