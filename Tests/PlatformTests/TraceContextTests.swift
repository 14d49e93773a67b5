import Platform
import Testing

/// W3C Trace Context parsing and propagation (https://www.w3.org/TR/trace-context/ §3.2, §4.3).
@Suite struct TraceContextTests {
    static let example = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    @Test func parsesTheSpecExample() throws {
        let parent = try #require(TraceContext.Parent(parsing: Self.example))
        #expect(parent.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(parent.spanID == "b7ad6b7169203331")
        #expect(parent.sampled)
        #expect(TraceContext.Parent(parsing: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.sampled == false)
        // Only bit 0 of the flags means "sampled".
        #expect(TraceContext.Parent(parsing: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03")?.sampled == true)
        #expect(TraceContext.Parent(parsing: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-02")?.sampled == false)
    }

    @Test(arguments: [
        "",
        "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",  // upper case
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // zero span id
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // forbidden version
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",  // version 00 has 4 fields
        "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",  // short trace id
        "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",  // a later version's extra part starts with "-"
    ])
    func refusesMalformedValues(_ value: String) {
        #expect(TraceContext.Parent(parsing: value) == nil, "\(value)")
    }

    @Test func acceptsALaterVersionWithMoreFields() {
        let parent = TraceContext.Parent(parsing: "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-holds")
        #expect(parent?.traceID == "0af7651916cd43dd8448eb211c80319c" && parent?.spanID == "b7ad6b7169203331")
    }

    @Test func continuingMakesAChildSpanInTheSameTrace() {
        let span = TraceContext.continuing(traceparent: Self.example, tracestate: "congo=t61rcWkgMzE")
        #expect(span.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(span.parentSpanID == "b7ad6b7169203331")
        #expect(span.spanID != "b7ad6b7169203331" && span.spanID.utf8.count == 16)
        #expect(span.traceState == "congo=t61rcWkgMzE")
        #expect(span.traceparent == "00-0af7651916cd43dd8448eb211c80319c-\(span.spanID)-01")
        let grandchild = span.child()
        #expect(grandchild.traceID == span.traceID && grandchild.parentSpanID == span.spanID && grandchild.traceState == span.traceState)
        // An unsampled trace stays unsampled downstream.
        let quiet = TraceContext.continuing(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", tracestate: nil)
        #expect(!quiet.sampled && quiet.traceparent.hasSuffix("-00") && !quiet.child().sampled)
    }

    @Test func anInvalidOrMissingParentStartsANewTraceAndDropsTheState() {
        for parent in [nil, "garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01"] {
            let span = TraceContext.continuing(traceparent: parent, tracestate: "congo=t61rcWkgMzE")
            #expect(span.parentSpanID == nil && span.traceState == nil && span.sampled)
            #expect(span.traceID.utf8.count == 32 && span.traceID != "0af7651916cd43dd8448eb211c80319c")
            #expect(TraceContext.Parent(parsing: span.traceparent)?.traceID == span.traceID)
        }
    }

    @Test func aTraceStateOutsideItsCharacterSetOrTooLongIsDropped() {
        #expect(TraceContext.continuing(traceparent: Self.example, tracestate: "a=b\nc").traceState == nil)
        #expect(TraceContext.continuing(traceparent: Self.example, tracestate: String(repeating: "a", count: 513)).traceState == nil)
        #expect(TraceContext.continuing(traceparent: Self.example, tracestate: "").traceState == nil)
    }

    @Test func idsAreLowerCaseHexAndDistinct() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let t = TraceContext.newTraceID()
            let s = TraceContext.newSpanID()
            #expect(t.utf8.count == 32 && s.utf8.count == 16)
            #expect((t + s).utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
            seen.insert(t)
        }
        #expect(seen.count == 1000)
    }

    @Test func theTaskLocalIsScopedToItsTask() async {
        #expect(TraceContext.current == nil)
        let span = TraceContext.root()
        await TraceContext.$current.withValue(span) {
            #expect(TraceContext.current == span)
            // Child tasks inherit it.
            async let inner = TraceContext.current
            #expect(await inner == span)
        }
        #expect(TraceContext.current == nil)
    }
}

@Suite struct TracerTests {
    func span(sampled: Bool = true) -> SpanRecord {
        let c = TraceContext.root()
        let context = TraceContext(traceID: c.traceID, spanID: c.spanID, parentSpanID: nil, sampled: sampled, traceState: nil)
        return SpanRecord(name: "x", kind: .server, context: context, startNanos: Tracer.now())
    }

    @Test func recordsNothingUntilEnabled() {
        let tracer = Tracer(registry: MetricsRegistry())
        tracer.record(span())
        #expect(tracer.queuedCount == 0 && !tracer.isEnabled)
        tracer.enable(capacity: 10, batchSize: 5)
        tracer.record(span())
        tracer.record(span(sampled: false))
        #expect(tracer.queuedCount == 1)
    }

    @Test func aFullQueueDropsAndCountsInsteadOfWaiting() {
        let registry = MetricsRegistry()
        let tracer = Tracer(registry: registry)
        tracer.enable(capacity: 3, batchSize: 2)
        for _ in 0..<5 { tracer.record(span()) }
        #expect(tracer.queuedCount == 3)
        #expect(registry.render().contains(#"signet_trace_spans_dropped_total{reason="queue_full"} 2"#), "\(registry.render())")
        let first = tracer.drain(max: 2)
        #expect(first.count == 2 && tracer.queuedCount == 1)
        #expect(tracer.drain(max: 10).count == 1 && tracer.drain(max: 10).isEmpty)
    }

    @Test func spansEndNoEarlierThanTheyStart() {
        let s = SpanRecord(name: "x", kind: .internal, context: .root(), startNanos: 100, endNanos: 50)
        #expect(s.endNanos == 100)
        #expect(Tracer.now() > 1_700_000_000_000_000_000)
    }
}
