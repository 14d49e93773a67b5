import Synchronization

/// A W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a unit of work belongs
/// to and the span that stands for it, as carried by the `traceparent` and `tracestate` HTTP
/// headers and by the CloudEvents Distributed Tracing extension (`ce_traceparent`,
/// `ce_tracestate` on Kafka).
///
/// Ids are kept as their lower-case hex text (32 and 16 characters): they are read from a
/// header, written to a header, a log line and an OTLP/JSON span, and never compared as numbers.
///
/// The work a task is doing is ``current`` (a task-local): the HTTP application sets it around
/// each handler, the event consumer around each event's transaction; internal calls and the
/// outbox read it to propagate the trace.
public struct TraceContext: Sendable, Equatable {
    /// 32 lower-case hex digits, not all zero.
    public let traceID: String
    /// This span's id: 16 lower-case hex digits, not all zero.
    public let spanID: String
    /// The span this one is a child of (nil for a root span).
    public let parentSpanID: String?
    /// Whether the trace is sampled (trace-flags bit 0). Unsampled spans are propagated but not
    /// exported.
    public let sampled: Bool
    /// The vendors' `tracestate`, passed on unchanged (bounded, checked for its character set).
    public let traceState: String?

    public init(traceID: String, spanID: String, parentSpanID: String?, sampled: Bool, traceState: String?) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.sampled = sampled
        self.traceState = traceState
    }

    /// The context of the work the current task is doing, if any.
    @TaskLocal public static var current: TraceContext?

    /// The `traceparent` value that names this span as the parent: `00-<trace>-<span>-<flags>`.
    public var traceparent: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }

    /// A new span in the same trace, child of this one.
    public func child() -> TraceContext {
        TraceContext(traceID: traceID, spanID: Self.newSpanID(), parentSpanID: spanID, sampled: sampled, traceState: traceState)
    }

    /// A new root span in a new, sampled trace.
    public static func root() -> TraceContext {
        TraceContext(traceID: newTraceID(), spanID: newSpanID(), parentSpanID: nil, sampled: true, traceState: nil)
    }

    /// The span of work that continues what `traceparent` names (a request's header, an event's
    /// attribute): a child of it, or a new root when it is absent or not valid (W3C §4.3: a
    /// receiver that cannot parse `traceparent` restarts the trace, and then drops
    /// `tracestate`).
    public static func continuing(traceparent: String?, tracestate: String?) -> TraceContext {
        guard let traceparent, let parent = Parent(parsing: traceparent) else { return root() }
        return TraceContext(
            traceID: parent.traceID, spanID: newSpanID(), parentSpanID: parent.spanID, sampled: parent.sampled,
            traceState: tracestate.flatMap(Self.acceptableTraceState))
    }

    // MARK: - Parsing

    /// The fields of a `traceparent` value.
    public struct Parent: Sendable, Equatable {
        public let traceID: String
        public let spanID: String
        public let sampled: Bool

        /// Parses `traceparent` (W3C §3.2): `version-traceid-parentid-flags`, lower-case hex.
        /// Version `ff` and all-zero ids are invalid; a version above `00` may carry more
        /// fields after a `-` (§3.2.4.1), which are ignored. Nil when it is not valid.
        public init?(parsing value: String) {
            // Read in place (a header's value is contiguous UTF-8): no copy into an array.
            guard let parsed = value.utf8.withContiguousStorageIfAvailable({ Parent(bytes: $0) }) ?? Parent(bytes: Array(value.utf8))
            else { return nil }
            self = parsed
        }

        private init?<Bytes: RandomAccessCollection<UInt8>>(bytes: Bytes) where Bytes.Index == Int {
            guard bytes.count >= 55, bytes.count <= 512 else { return nil }
            func isHex(_ range: Range<Int>) -> Bool {
                bytes[range].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
            }
            func allZero(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { $0 == 0x30 } }
            let dash = UInt8(ascii: "-")
            guard isHex(0..<2), bytes[2] == dash, isHex(3..<35), bytes[35] == dash, isHex(36..<52), bytes[52] == dash, isHex(53..<55)
            else { return nil }
            let version = String(decoding: bytes[0..<2], as: UTF8.self)
            guard version != "ff" else { return nil }
            // Version 00 is exactly 55 characters; a later version may append "-…".
            if version == "00" { guard bytes.count == 55 else { return nil } } else if bytes.count > 55 { guard bytes[55] == dash else { return nil } }
            guard !allZero(3..<35), !allZero(36..<52) else { return nil }
            traceID = String(decoding: bytes[3..<35], as: UTF8.self)
            spanID = String(decoding: bytes[36..<52], as: UTF8.self)
            let flags = bytes[54]
            // The low bit of the flags byte is its last hex digit's low bit.
            sampled = (flags >= 0x30 && flags <= 0x39 ? flags - 0x30 : flags - 0x61 + 10) & 1 == 1
        }
    }

    /// `tracestate` as received when it is short and made of its grammar's characters
    /// (printable ASCII; W3C §3.3 allows 32 members of at most 256 characters each, and lets a
    /// vendor drop it), else nil.
    static func acceptableTraceState(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= 512, value.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else { return nil }
        return value
    }

    // MARK: - Ids

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// `values` as 16 lower-case hex digits each, written straight into the string's storage
    /// (no array of values per id: it was an allocation on every request).
    private static func hex(_ first: UInt64, _ second: UInt64? = nil) -> String {
        String(unsafeUninitializedCapacity: second == nil ? 16 : 32) { buffer in
            let digits = hexDigits.utf8Start
            for i in 0..<16 { buffer[i] = digits[Int((first >> UInt64(60 - 4 * i)) & 0xF)] }
            guard let second else { return 16 }
            for i in 0..<16 { buffer[16 + i] = digits[Int((second >> UInt64(60 - 4 * i)) & 0xF)] }
            return 32
        }
    }

    /// A random trace id (never all zero).
    public static func newTraceID() -> String {
        let n = IDSource.next()
        return hex(IDSource.value(n, lane: 1), IDSource.value(n, lane: 2))
    }

    /// A random span id (never all zero).
    public static func newSpanID() -> String {
        hex(IDSource.value(IDSource.next(), lane: 3))
    }
}

/// Where ids come from: a keyed hash (the standard library's SipHash, keyed per process, plus a
/// 128-bit seed from the system generator) of a per-process counter and a lane. One
/// `getrandom(2)` per id cost 1-1.5 µs each here under load, three per request that starts a
/// trace; this is an atomic increment and a hash. A -O micro-benchmark under load 10: a new
/// root context 3.8-4.6 µs with getrandom, 0.6-0.7 µs with this; continuing a traceparent
/// 0.7-0.8 µs (a request id, `RandomUUID`, costs 2.1-2.6 µs there). The ids are unique within the process (distinct
/// inputs), unpredictable without the key, and independent across processes (the seed), which
/// is what W3C Trace Context §3.2.2.3 asks; they are never used as secrets.
enum IDSource {
    static let seed: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    static let counter = Atomic<UInt64>(0)

    static func next() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).oldValue }

    static func value(_ n: UInt64, lane: UInt64) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(seed.0)
        hasher.combine(seed.1)
        hasher.combine(n)
        hasher.combine(lane)
        let v = UInt64(truncatingIfNeeded: hasher.finalize())
        return v == 0 ? 1 : v
    }
}
