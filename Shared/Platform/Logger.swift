import FoundationEssentials
import Glibc

/// A structured logger shaped like swift-log's `Logger`: a label, a level, metadata, and
/// messages built lazily. Lines go to standard error as JSON (or `key=value` text).
///
/// - Important: Metadata must never carry PII or secrets. Log route templates, tenant ids,
///   request ids and error codes; never usernames, tokens, keys or request bodies.
public struct Logger: Sendable {
    /// Severity, ordered from most to least verbose.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error, critical

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        /// Parses a level name as used by `SIGNET_LOG_LEVEL`.
        public init?(name: String) {
            switch name.lowercased() {
            case "trace": self = .trace
            case "debug": self = .debug
            case "info": self = .info
            case "notice": self = .notice
            case "warning", "warn": self = .warning
            case "error": self = .error
            case "critical": self = .critical
            default: return nil
            }
        }
    }

    /// A metadata value: a string, or nested metadata.
    public enum MetadataValue: Sendable, ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
        CustomStringConvertible, Equatable
    {
        case string(String)
        case stringConvertible(String)

        public init(stringLiteral value: String) { self = .string(value) }
        public var description: String {
            switch self {
            case .string(let s), .stringConvertible(let s): s
            }
        }
    }

    public typealias Metadata = [String: MetadataValue]

    public let label: String
    public var logLevel: Level
    public var metadata: Metadata
    /// The served request's metadata, kept as fields and merged into a line's metadata only when
    /// a line is written (``RequestMetadata``).
    public var request: RequestMetadata?

    /// What every line logged while serving one request carries: its request id, trace and span,
    /// and once routed its route template and checked tenant.
    ///
    /// Held as plain fields rather than written into ``Logger/metadata`` on every request: five
    /// dictionary insertions per request (hashing each key, growing the storage) were about 6 %
    /// of a `/healthz` request's CPU in a profile, for lines that a production level mostly
    /// never writes. A key set in ``Logger/metadata`` wins over the same key here.
    public struct RequestMetadata: Sendable {
        public var requestID: String
        public var traceID: String
        public var spanID: String
        public var route: String?
        public var tenant: String?

        public init(requestID: String, traceID: String, spanID: String, route: String? = nil, tenant: String? = nil) {
            self.requestID = requestID
            self.traceID = traceID
            self.spanID = spanID
            self.route = route
            self.tenant = tenant
        }

        /// The value of `key` among these fields, if it is one of theirs.
        public subscript(key: String) -> MetadataValue? {
            switch key {
            case LogKey.requestID: .string(requestID)
            case LogKey.traceID: .string(traceID)
            case LogKey.spanID: .string(spanID)
            case LogKey.route: route.map { .string($0) }
            case LogKey.tenant: tenant.map { .string($0) }
            default: nil
            }
        }

        /// Adds these fields to `metadata` where it has no value for their keys.
        func merge(into metadata: inout Metadata) {
            for key in [LogKey.requestID, LogKey.traceID, LogKey.spanID, LogKey.route, LogKey.tenant] where metadata[key] == nil {
                if let value = self[key] { metadata[key] = value }
            }
        }
    }

    public init(label: String, level: Level = LoggingSystem.defaultLevel, metadata: Metadata = [:]) {
        self.label = label
        self.logLevel = level
        self.metadata = metadata
        self.request = nil
    }

    /// A metadata value: from ``metadata``, else from the request's fields (``request``).
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { metadata[key] ?? request?[key] }
        set { metadata[key] = newValue }
    }

    /// Logs `message` at `level` when the logger's level lets it through.
    public func log(
        level: Level, _ message: @autoclosure () -> String, metadata extra: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        var merged = metadata
        request?.merge(into: &merged)
        if let extra = extra() { merged.merge(extra) { _, new in new } }
        // Inside traced work (a request, a consumed event) every line names its trace, whichever
        // logger writes it.
        if merged[LogKey.traceID] == nil, let trace = TraceContext.current {
            merged[LogKey.traceID] = .string(trace.traceID)
            merged[LogKey.spanID] = .string(trace.spanID)
        }
        LoggingSystem.sink.write(
            label: label, level: level, message: message(), metadata: merged, file: file, line: line)
    }

    public func trace(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .trace, m(), metadata: metadata(), file: file, line: line)
    }
    public func debug(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .debug, m(), metadata: metadata(), file: file, line: line)
    }
    public func info(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .info, m(), metadata: metadata(), file: file, line: line)
    }
    public func notice(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .notice, m(), metadata: metadata(), file: file, line: line)
    }
    public func warning(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .warning, m(), metadata: metadata(), file: file, line: line)
    }
    public func error(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .error, m(), metadata: metadata(), file: file, line: line)
    }
    public func critical(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil, file: String = #fileID, line: UInt = #line) {
        log(level: .critical, m(), metadata: metadata(), file: file, line: line)
    }
}

/// Metadata keys used across Signet, in one place so that log queries stay stable.
public enum LogKey {
    public static let requestID = "signet.request.id"
    public static let tenant = "signet.tenant"
    public static let route = "signet.http.route"
    public static let method = "signet.http.method"
    public static let status = "signet.http.status"
    public static let durationMs = "signet.duration_ms"
    public static let errorCode = "signet.error.code"
    public static let error = "signet.error"
    public static let eventID = "signet.event.id"
    public static let eventType = "signet.event.type"
    public static let topic = "signet.kafka.topic"
    public static let partition = "signet.kafka.partition"
    public static let offset = "signet.kafka.offset"
    public static let service = "signet.service"
    public static let migration = "signet.migration"
    /// The W3C trace id and span id of the work being logged. Named as the OpenTelemetry log
    /// data model names them (not `signet.*`), so that log tools link lines to traces.
    public static let traceID = "trace_id"
    public static let spanID = "span_id"
}

/// Process-wide logging configuration.
public enum LoggingSystem {
    /// Output format of log lines.
    public enum Format: Sendable { case json, text }

    /// The level new loggers start at; from `SIGNET_LOG_LEVEL` (default `info`).
    public static var defaultLevel: Logger.Level {
        Logger.Level(name: ProcessInfo.processInfo.environment["SIGNET_LOG_LEVEL"] ?? "info") ?? .info
    }

    static let sink = LogSink(
        format: ProcessInfo.processInfo.environment["SIGNET_LOG_FORMAT"] == "text" ? .text : .json)
}

/// Serialises log lines to standard error; one lock keeps lines whole.
final class LogSink: Sendable {
    let format: LoggingSystem.Format
    private let lock = PlainLock<Void>(())

    init(format: LoggingSystem.Format) { self.format = format }

    func write(label: String, level: Logger.Level, message: String, metadata: Logger.Metadata, file: String, line: UInt) {
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date())
        var out: String
        switch format {
        case .json:
            out = "{\"time\":\(jsonString(time)),\"level\":\"\(level)\",\"logger\":\(jsonString(label)),\"msg\":\(jsonString(message))"
            for key in metadata.keys.sorted() {
                out += ",\(jsonString(key)):\(jsonString(metadata[key]!.description))"
            }
            if level >= .warning { out += ",\"source\":\(jsonString("\(file):\(line)"))" }
            out += "}\n"
        case .text:
            out = "\(time) \(level) \(label): \(message)"
            for key in metadata.keys.sorted() { out += " \(key)=\(metadata[key]!.description)" }
            out += "\n"
        }
        // One write(2) per line on fd 2, under the lock so that lines never interleave.
        lock.withLock { _ in
            var bytes = Array(out.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
                if n <= 0 { break }
                offset += n
            }
        }
    }
}

/// Encodes `s` as a JSON string literal.
public func jsonString(_ s: String) -> String {
    var out = "\""
    out.reserveCapacity(s.utf8.count + 2)
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                out += "\\u" + NumberText.hex4(scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    out += "\""
    return out
}
