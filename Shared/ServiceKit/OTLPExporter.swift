import Delivery
import FoundationEssentials
import JSON
import Platform

/// Where and how a service exports its spans: OTLP over HTTP with the JSON encoding
/// (https://opentelemetry.io/docs/specs/otlp/#otlphttp), to a collector.
public struct OTLPConfiguration: Sendable, Equatable {
    /// The traces URL, e.g. `http://collector:4318/v1/traces`.
    public var endpoint: URL
    /// Spans kept while waiting for export; more are dropped (counted).
    public var queueSize: Int
    /// Spans per export request.
    public var batchSize: Int
    /// The longest a span waits before its batch is sent.
    public var interval: Duration

    public init(endpoint: URL, queueSize: Int = 2048, batchSize: Int = 256, interval: Duration = .seconds(1)) {
        self.endpoint = endpoint
        self.queueSize = queueSize
        self.batchSize = batchSize
        self.interval = interval
    }

    /// From `SIGNET_OTLP_ENDPOINT` (or OpenTelemetry's `OTEL_EXPORTER_OTLP_ENDPOINT`): the
    /// collector's OTLP/HTTP base URL; `/v1/traces` is appended unless the URL already ends
    /// with it (as OpenTelemetry's SDKs do with the base endpoint). Unset: nil, tracing export
    /// off. `SIGNET_OTLP_QUEUE_SIZE` (default 2048), `SIGNET_OTLP_BATCH_SIZE` (256) and
    /// `SIGNET_OTLP_INTERVAL_MS` (1000) tune it.
    ///
    /// - Throws: `Environment.ConfigurationError` for a URL that is not `http(s)://host…`
    ///   or a setting out of range.
    public static func fromEnvironment(_ env: Environment) throws -> OTLPConfiguration? {
        let variable = env.optionalString("SIGNET_OTLP_ENDPOINT") != nil ? "SIGNET_OTLP_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT"
        guard let text = env.optionalString(variable), !text.isEmpty else { return nil }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        if !base.hasSuffix("/v1/traces") { base += "/v1/traces" }
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host?.isEmpty == false,
            url.user == nil, url.query == nil
        else {
            throw Environment.ConfigurationError(variable: variable, reason: "expected an http(s) URL of an OTLP/HTTP collector")
        }
        let queue = try env.int("SIGNET_OTLP_QUEUE_SIZE", default: 2048, range: 1...1_000_000)
        return OTLPConfiguration(
            endpoint: url, queueSize: queue,
            batchSize: min(queue, try env.int("SIGNET_OTLP_BATCH_SIZE", default: 256, range: 1...10_000)),
            interval: .milliseconds(try env.int("SIGNET_OTLP_INTERVAL_MS", default: 1000, range: 10...60_000)))
    }
}

/// Sends the ``Tracer``'s spans to an OTLP/HTTP collector, a batch at a time.
///
/// Guarantees: request handlers never wait for it (they only append to the tracer's bounded
/// queue); a batch goes out when it is full or ``OTLPConfiguration/interval`` after the last
/// turn, one request at a time; a batch the collector refuses or cannot take is dropped and
/// counted (`signet_trace_spans_dropped_total{reason="export_failed"}`), never retried into an
/// unbounded backlog; on shutdown (it stops last) what is queued is sent once more.
public final class OTLPExporter: Service {
    public let name = "otlp-exporter"
    let configuration: OTLPConfiguration
    let tracer: Tracer
    let logger: Logger
    /// The `resource` member of every request, encoded once.
    let resourceJSON: String
    private let stopping = AtomicFlag(false)
    /// Its own client (one lane): exports go one at a time, and never wait behind internal calls.
    private let client = HTTPClient(label: "signet.otlp", lanes: 1)
    /// Whether the last export failed (a failure is logged when it starts, not per batch).
    private let failing = AtomicFlag(false)

    /// - Parameters:
    ///   - service: `service.name` of the spans (`signet-<service>`).
    ///   - instance: `service.instance.id`.
    public init(configuration: OTLPConfiguration, service: String, instance: String, tracer: Tracer = .shared, logger: Logger) {
        self.configuration = configuration
        self.tracer = tracer
        self.logger = logger
        resourceJSON =
            #"{"attributes":[{"key":"service.name","value":{"stringValue":"# + jsonString(service) + #"}},"#
            + #"{"key":"service.namespace","value":{"stringValue":"signet"}},"#
            + #"{"key":"service.instance.id","value":{"stringValue":"# + jsonString(instance) + "}}]}"
        tracer.enable(capacity: configuration.queueSize, batchSize: configuration.batchSize)
    }

    public func run() async throws {
        var waiter = tracer.wakeups.makeWaiter()
        while !stopping.isSet {
            await waiter.wait(timeout: configuration.interval)
            await exportQueued()
        }
        await exportQueued()
    }

    public func shutdown() async {
        stopping.set(true)
        tracer.wakeups.signal()
    }

    /// Sends every queued span, a batch per request.
    func exportQueued() async {
        while true {
            let batch = tracer.drain(max: configuration.batchSize)
            if batch.isEmpty { return }
            await export(batch)
            if batch.count < configuration.batchSize { return }
        }
    }

    private func export(_ spans: [SpanRecord]) async {
        let body = Self.encode(spans, resource: resourceJSON)
        let status = (try? await client.send(
            "POST", configuration.endpoint.absoluteString, headers: ["Content-Type: application/json"], body: body, timeout: .seconds(5), responseLimit: 4096))?.status
        if let status, (200..<300).contains(status) {
            tracer.exported.increment(by: spans.count)
            if failing.isSet {
                failing.set(false)
                logger.notice("span export resumed")
            }
        } else {
            tracer.droppedExport.increment(by: spans.count)
            if !failing.isSet {
                failing.set(true)
                logger.warning("span export failed; dropping spans until the collector answers", metadata: ["signet.http.status": .string(status.map(String.init) ?? "none")])
            }
        }
    }

    /// An OTLP/JSON `ExportTraceServiceRequest` of `spans` (ids in hex, times and integers as
    /// decimal strings, as the OTLP JSON mapping wants), written into one byte buffer.
    static func encode(_ spans: [SpanRecord], resource: String) -> [UInt8] {
        var out = JSONWriter()
        out.reserveCapacity(resource.utf8.count + 96 + spans.count * 400)
        out.writeRaw(#"{"resourceSpans":[{"resource":"#)
        out.writeRaw(resource)
        out.writeRaw(#","scopeSpans":[{"scope":{"name":"signet"},"spans":["#)
        for (i, span) in spans.enumerated() {
            if i > 0 { out.writeComma() }
            out.writeRaw(#"{"traceId":"#)
            out.writeString(span.context.traceID)
            out.writeRaw(#","spanId":"#)
            out.writeString(span.context.spanID)
            if let parent = span.context.parentSpanID {
                out.writeRaw(#","parentSpanId":"#)
                out.writeString(parent)
            }
            if let state = span.context.traceState {
                out.writeRaw(#","traceState":"#)
                out.writeString(state)
            }
            out.writeRaw(#","name":"#)
            out.writeString(span.name)
            out.writeRaw(#","kind":"#)
            out.writeInt(span.kind.rawValue)
            out.writeRaw(#","startTimeUnixNano":""#)
            out.writeRaw(String(span.startNanos))
            out.writeRaw(#"","endTimeUnixNano":""#)
            out.writeRaw(String(span.endNanos))
            out.writeRaw(#"","attributes":["#)
            for (j, attribute) in span.attributes.enumerated() {
                if j > 0 { out.writeComma() }
                out.writeRaw(#"{"key":"#)
                out.writeString(attribute.key)
                switch attribute.value {
                case .string(let s):
                    out.writeRaw(#","value":{"stringValue":"#)
                    out.writeString(s)
                    out.writeRaw("}}")
                case .int(let n):
                    out.writeRaw(#","value":{"intValue":""#)
                    out.writeInt(n)
                    out.writeRaw(#""}}"#)
                }
            }
            out.writeRaw("]")
            if span.isError { out.writeRaw(#","status":{"code":2}"#) }
            out.writeRaw("}")
        }
        out.writeRaw("]}]}]}")
        return out.bytes
    }
}
