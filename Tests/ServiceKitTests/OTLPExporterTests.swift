import Foundation
import Kafka
import Platform
import Schema
import Testing
@testable import ServiceKit

@Suite struct OTLPExporterTests {
    static let context = TraceContext(
        traceID: "0af7651916cd43dd8448eb211c80319c", spanID: "b7ad6b7169203331", parentSpanID: "00f067aa0ba902b7", sampled: true, traceState: "congo=t61rcWkgMzE")

    @Test func encodesAnOTLPJSONTraceRequest() throws {
        let span = SpanRecord(
            name: "POST /v1/tenants/{tenant}/signins", kind: .server, context: Self.context, startNanos: 1_764_000_000_000_000_000,
            endNanos: 1_764_000_000_250_000_000, attributes: [("http.route", .string("/v1/tenants/{tenant}/signins")), ("http.response.status_code", .int(503))],
            isError: true)
        let root = SpanRecord(name: "x\"y", kind: .consumer, context: .root(), startNanos: 1, endNanos: 2)
        let exporter = OTLPExporter(
            configuration: OTLPConfiguration(endpoint: URL(string: "http://127.0.0.1:9/v1/traces")!), service: "signet-authentication", instance: "host-1",
            tracer: Tracer(registry: MetricsRegistry()), logger: Logger(label: "test", level: .critical))
        let text = OTLPExporter.encode([span, root], resource: exporter.resourceJSON)
        // Read back with Foundation's parser: an independent reading of what a collector gets.
        let request = try #require(try JSONSerialization.jsonObject(with: Data(text)) as? [String: Any])
        let resourceSpans = try #require((request["resourceSpans"] as? [[String: Any]])?.first)
        let resource = try #require((resourceSpans["resource"] as? [String: Any])?["attributes"] as? [[String: Any]])
        func string(_ attributes: [[String: Any]], _ key: String) -> String? {
            (attributes.first { $0["key"] as? String == key }?["value"] as? [String: Any])?["stringValue"] as? String
        }
        #expect(string(resource, "service.name") == "signet-authentication" && string(resource, "service.instance.id") == "host-1")
        let scope = try #require((resourceSpans["scopeSpans"] as? [[String: Any]])?.first)
        let spans = try #require(scope["spans"] as? [[String: Any]])
        #expect(spans.count == 2)
        let first = spans[0]
        #expect(first["traceId"] as? String == "0af7651916cd43dd8448eb211c80319c" && first["spanId"] as? String == "b7ad6b7169203331")
        #expect(first["parentSpanId"] as? String == "00f067aa0ba902b7" && first["traceState"] as? String == "congo=t61rcWkgMzE")
        #expect(first["kind"] as? Int == 2 && first["name"] as? String == "POST /v1/tenants/{tenant}/signins")
        // int64 values as decimal strings (the OTLP JSON mapping).
        #expect(first["startTimeUnixNano"] as? String == "1764000000000000000" && first["endTimeUnixNano"] as? String == "1764000000250000000")
        let attributes = try #require(first["attributes"] as? [[String: Any]])
        let status = attributes.first { $0["key"] as? String == "http.response.status_code" }?["value"] as? [String: Any]
        #expect(status?["intValue"] as? String == "503" && string(attributes, "http.route") == "/v1/tenants/{tenant}/signins")
        #expect((first["status"] as? [String: Any])?["code"] as? Int == 2)
        // A root span has no parent; no error status unless it failed; names are escaped.
        #expect(spans[1]["parentSpanId"] == nil && spans[1]["status"] == nil && spans[1]["name"] as? String == "x\"y" && spans[1]["kind"] as? Int == 5)
    }

    @Test func configurationFromTheEnvironment() throws {
        #expect(try OTLPConfiguration.fromEnvironment(Environment([:])) == nil)
        #expect(try OTLPConfiguration.fromEnvironment(Environment(["SIGNET_OTLP_ENDPOINT": ""])) == nil)
        let base = try #require(try OTLPConfiguration.fromEnvironment(Environment(["SIGNET_OTLP_ENDPOINT": "http://collector:4318/"])))
        #expect(base.endpoint.absoluteString == "http://collector:4318/v1/traces" && base.queueSize == 2048 && base.batchSize == 256)
        let full = try #require(try OTLPConfiguration.fromEnvironment(Environment([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:4318/v1/traces", "SIGNET_OTLP_QUEUE_SIZE": "100", "SIGNET_OTLP_BATCH_SIZE": "500",
            "SIGNET_OTLP_INTERVAL_MS": "250",
        ])))
        #expect(full.endpoint.absoluteString == "https://otel.example:4318/v1/traces" && full.queueSize == 100 && full.batchSize == 100)
        #expect(full.interval == .milliseconds(250))
        for bad in ["collector:4318", "ftp://collector/", "http://user:secret@collector:4318", "http:///v1/traces"] {
            #expect(throws: Environment.ConfigurationError.self, "\(bad)") { try OTLPConfiguration.fromEnvironment(Environment(["SIGNET_OTLP_ENDPOINT": bad])) }
        }
        #expect(throws: Environment.ConfigurationError.self) {
            try OTLPConfiguration.fromEnvironment(Environment(["SIGNET_OTLP_ENDPOINT": "http://c:4318", "SIGNET_OTLP_QUEUE_SIZE": "0"]))
        }
    }

    @Test func aBatchTheCollectorCannotTakeIsDroppedAndCounted() async throws {
        let registry = MetricsRegistry()
        let tracer = Tracer(registry: registry)
        // Port 9 (discard) on loopback: nothing listens, the connection is refused.
        let exporter = OTLPExporter(
            configuration: OTLPConfiguration(endpoint: URL(string: "http://127.0.0.1:9/v1/traces")!, batchSize: 2), service: "signet-test", instance: "i",
            tracer: tracer, logger: Logger(label: "test", level: .critical))
        #expect(tracer.isEnabled)
        for _ in 0..<3 { tracer.record(SpanRecord(name: "s", kind: .internal, context: .root(), startNanos: Tracer.now())) }
        await exporter.exportQueued()
        #expect(tracer.queuedCount == 0)
        #expect(registry.render().contains(#"signet_trace_spans_dropped_total{reason="export_failed"} 3"#), "\(registry.render())")
        #expect(registry.render().contains("signet_trace_spans_exported_total 0"))
    }

    @Test func eventsCarryTheTracingExtensionOverKafka() throws {
        var envelope = try EventEnvelope(TenantUpserted.fullExample, source: "/signet/registration", subject: "demo")
        envelope.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        envelope.tracestate = "congo=t61rcWkgMzE"
        let message = envelope.kafkaMessage(topic: Topic.registration, key: "demo")
        #expect(message.headers.contains { $0.name == "ce_traceparent" && $0.value == envelope.traceparent })
        #expect(message.headers.contains { $0.name == "ce_tracestate" && $0.value == "congo=t61rcWkgMzE" })
        func record(_ headers: [(name: String, value: String)]) -> KafkaRecord {
            KafkaRecord(topic: message.topic, partition: 0, offset: 0, key: nil, value: message.value, headers: headers.map { ($0.name, Array($0.value.utf8)) })
        }
        let back = try EventEnvelope(record: record(message.headers))
        #expect(back.traceparent == envelope.traceparent && back.tracestate == envelope.tracestate)
        // A malformed traceparent is dropped with its tracestate, never a reason to refuse the event.
        var broken = message.headers.filter { $0.name != "ce_traceparent" }
        broken.append(("ce_traceparent", "00-zz-b7ad6b7169203331-01"))
        let tolerated = try EventEnvelope(record: record(broken))
        #expect(tolerated.traceparent == nil && tolerated.tracestate == nil && tolerated.id == envelope.id)
        // Without the extension: nothing (an event from before tracing, or from outside it).
        let plain = try EventEnvelope(record: record(message.headers.filter { !$0.name.hasPrefix("ce_trace") }))
        #expect(plain.traceparent == nil)
    }
}
