#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A finished span, as the exporter sends it (OTLP's `Span`, the fields Signet sets).
///
/// - Important: Attributes must never carry PII or secrets: route templates, methods, status
///   codes, tenant ids, event types and ids, topics. Never paths (they carry usernames), bodies,
///   tokens or addresses.
public struct SpanRecord: Sendable {
    /// OTLP `SpanKind` values.
    public enum Kind: Int, Sendable {
        case `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5
    }

    /// An attribute value.
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int)
    }

    public let name: String
    public let kind: Kind
    public let context: TraceContext
    /// Wall-clock times, nanoseconds since the Unix epoch.
    public let startNanos: UInt64
    public let endNanos: UInt64
    public let attributes: [(key: String, value: Value)]
    /// OTLP status: error (2) when true, unset otherwise.
    public let isError: Bool

    public init(
        name: String, kind: Kind, context: TraceContext, startNanos: UInt64, endNanos: UInt64 = Tracer.now(),
        attributes: [(key: String, value: Value)] = [], isError: Bool = false
    ) {
        self.name = name
        self.kind = kind
        self.context = context
        self.startNanos = startNanos
        self.endNanos = max(endNanos, startNanos)
        self.attributes = attributes
        self.isError = isError
    }
}

/// The process's span buffer: request handlers and consumers ``record(_:)`` finished spans, an
/// exporter (``OTLPExporter`` in ServiceKit) drains them in batches.
///
/// Off by default: until ``enable(capacity:batchSize:)`` is called (when `SIGNET_OTLP_ENDPOINT`
/// is set) ``isEnabled`` is false and ``record(_:)`` returns at once, so the hot path pays one
/// atomic load. Trace contexts are still made and propagated, and trace ids still logged.
///
/// Recording never blocks on the exporter: a span is appended to a bounded queue under a
/// ``PlainLock`` (a few nanoseconds; an actor hop per request would cost more than the append),
/// and when the queue is full the span is dropped and counted in
/// `signet_trace_spans_dropped_total{reason="queue_full"}`.
public final class Tracer: Sendable {
    /// The process's tracer.
    public static let shared = Tracer()

    private let enabled = Atomic<Bool>(false)
    private let queue = PlainLock<Queue>(Queue())
    /// Signalled when a batch is ready, so the exporter need not wait for its interval.
    public let wakeups = Wakeups()
    private let droppedFull: Counter
    /// Spans the exporter gave up on (the collector refused them or could not be reached).
    public let droppedExport: Counter
    /// Spans the collector accepted.
    public let exported: Counter

    struct Queue {
        var spans: [SpanRecord] = []
        var capacity = 2048
        var batchSize = 256
    }

    /// A tracer whose counters live in `registry` (tests use their own; the process uses
    /// ``shared``, whose counters `/metrics` shows from start-up).
    public init(registry: MetricsRegistry = .shared) {
        droppedFull = Counter(label: "signet_trace_spans_dropped_total", dimensions: [("reason", "queue_full")], registry: registry)
        droppedExport = Counter(label: "signet_trace_spans_dropped_total", dimensions: [("reason", "export_failed")], registry: registry)
        exported = Counter(label: "signet_trace_spans_exported_total", registry: registry)
    }

    /// Whether spans are recorded (an exporter is configured).
    public var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Starts recording, keeping at most `capacity` spans until the exporter takes them.
    public func enable(capacity: Int = 2048, batchSize: Int = 256) {
        queue.withLock {
            $0.capacity = max(1, capacity)
            $0.batchSize = max(1, min(batchSize, capacity))
            $0.spans.reserveCapacity(min(capacity, 4096))
        }
        enabled.store(true, ordering: .relaxed)
    }

    /// Stops recording and forgets queued spans (tests).
    public func disable() {
        enabled.store(false, ordering: .relaxed)
        queue.withLock { $0.spans.removeAll() }
    }

    /// Queues a finished span for export; drops it (counted) when the queue is full. Unsampled
    /// spans and everything while disabled are ignored. Never blocks beyond the queue's lock.
    public func record(_ span: SpanRecord) {
        guard isEnabled, span.context.sampled else { return }
        let (accepted, batchReady) = queue.withLock { q -> (Bool, Bool) in
            guard q.spans.count < q.capacity else { return (false, false) }
            q.spans.append(span)
            return (true, q.spans.count == q.batchSize)
        }
        if !accepted { droppedFull.increment() }
        if batchReady { wakeups.signal() }
    }

    /// Takes up to `max` queued spans, oldest first.
    public func drain(max: Int) -> [SpanRecord] {
        queue.withLock { q in
            let n = Swift.min(max, q.spans.count)
            guard n > 0 else { return [] }
            let taken = Array(q.spans[0..<n])
            q.spans.removeFirst(n)
            return taken
        }
    }

    /// The number of spans waiting for export.
    public var queuedCount: Int { queue.withLock { $0.spans.count } }

    /// The configured batch size.
    public var batchSize: Int { queue.withLock { $0.batchSize } }

    /// Now, in nanoseconds since the Unix epoch (CLOCK_REALTIME, as OTLP wants).
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
