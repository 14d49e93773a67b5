import FoundationEssentials
import Glibc
import JSON

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
    ///
    /// A line's fields: `metadata` given here, then the logger's ``metadata``, then the request's
    /// fields (``request``), then the current trace; the first to name a key wins. They are
    /// gathered into one small array and written sorted by key, without the dictionary copies
    /// and merges this used to make: at the default level every request writes a line, and
    /// building it was 10 % of the authentication service's CPU under the ceremony load.
    public func log(
        level: Level, _ message: @autoclosure () -> String, metadata extra: @autoclosure () -> Metadata? = nil,
        file: String = #fileID, line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        var fields = lineFields(extra())
        LoggingSystem.sink.write(label: label, level: level, message: message(), fields: &fields, file: file, line: line)
    }

    /// The fields of a line logged now with `extra` metadata, in order of precedence.
    func lineFields(_ extra: Metadata?) -> LogFields {
        var fields = LogFields(capacity: metadata.count + (extra?.count ?? 0) + 7)
        if let extra {
            for (key, value) in extra { fields.append(key, value.description) }
        }
        for (key, value) in metadata { fields.add(key, value.description) }
        if let request {
            fields.add(LogKey.requestID, request.requestID)
            fields.add(LogKey.traceID, request.traceID)
            fields.add(LogKey.spanID, request.spanID)
            if let route = request.route { fields.add(LogKey.route, route) }
            if let tenant = request.tenant { fields.add(LogKey.tenant, tenant) }
        }
        // Inside traced work (a request, a consumed event) every line names its trace, whichever
        // logger writes it.
        if !fields.contains(LogKey.traceID), let trace = TraceContext.current {
            fields.append(LogKey.traceID, trace.traceID)
            fields.set(LogKey.spanID, trace.spanID)
        }
        return fields
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

/// A line's fields as key and value pairs, in the order added; a key is added only once.
struct LogFields {
    private(set) var pairs: [(key: String, value: String)] = []

    init(capacity: Int) { pairs.reserveCapacity(capacity) }

    func contains(_ key: String) -> Bool { pairs.contains { $0.key == key } }
    /// Adds a field whose key is known to be new.
    mutating func append(_ key: String, _ value: String) { pairs.append((key, value)) }
    /// Adds a field unless its key is already there.
    mutating func add(_ key: String, _ value: String) {
        if !contains(key) { pairs.append((key, value)) }
    }
    /// Sets a field, replacing the value of its key if it is there.
    mutating func set(_ key: String, _ value: String) {
        if let i = pairs.firstIndex(where: { $0.key == key }) { pairs[i].value = value } else { pairs.append((key, value)) }
    }
    mutating func sort() {
        // At most a dozen fields: an insertion sort, no closure context allocated.
        if pairs.count < 2 { return }
        for i in 1..<pairs.count {
            var j = i
            while j > 0, pairs[j].key < pairs[j - 1].key {
                pairs.swapAt(j, j - 1)
                j -= 1
            }
        }
    }
}

/// Serialises log lines to standard error; one lock keeps lines whole.
///
/// A line is written into one byte buffer: strings are escaped a run at a time over their
/// UTF-8 (``JSONWriter``), the time is formatted from `clock_gettime` (no Foundation
/// formatter), then one `write(2)` under the lock.
final class LogSink: Sendable {
    let format: LoggingSystem.Format
    private let lock = PlainLock<Void>(())

    init(format: LoggingSystem.Format) { self.format = format }

    func write(label: String, level: Logger.Level, message: String, fields: inout LogFields, file: String, line: UInt) {
        let out = render(label: label, level: level, message: message, fields: &fields, file: file, line: line, now: Self.now())
        // One write(2) per line on fd 2, under the lock so that lines never interleave.
        lock.withLock { _ in
            out.withUnsafeBufferPointer { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }

    /// The wall clock: seconds since the Unix epoch and milliseconds.
    static func now() -> (seconds: Int64, milliseconds: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (Int64(ts.tv_sec), Int(ts.tv_nsec / 1_000_000))
    }

    /// A line's bytes, newline included.
    func render(
        label: String, level: Logger.Level, message: String, fields: inout LogFields, file: String, line: UInt,
        now: (seconds: Int64, milliseconds: Int)
    ) -> [UInt8] {
        fields.sort()
        var out = JSONWriter()
        out.reserveCapacity(160 + message.utf8.count + fields.pairs.count * 48)
        switch format {
        case .json:
            out.writeRaw(#"{"time":"#)
            out.writeUTCTimestamp(seconds: now.seconds, milliseconds: now.milliseconds)
            out.writeRaw(#","level":""#)
            out.writeRaw(level.description)
            out.writeRaw(#"","logger":"#)
            out.writeString(label)
            out.writeRaw(#","msg":"#)
            out.writeString(message)
            for field in fields.pairs {
                out.writeComma()
                out.writeString(field.key)
                out.writeRaw(":")
                out.writeString(field.value)
            }
            if level >= .warning {
                out.writeRaw(#","source":"#)
                out.writeString("\(file):\(line)")
            }
            out.writeRaw("}\n")
        case .text:
            out.writeUTCTimestamp(seconds: now.seconds, milliseconds: now.milliseconds, quoted: false)
            out.writeRaw(" ")
            out.writeRaw(level.description)
            out.writeRaw(" ")
            out.writeRaw(label)
            out.writeRaw(": ")
            out.writeRaw(message)
            for field in fields.pairs {
                out.writeRaw(" ")
                out.writeRaw(field.key)
                out.writeRaw("=")
                out.writeRaw(field.value)
            }
            out.writeRaw("\n")
        }
        return out.bytes
    }
}

/// Encodes `s` as a JSON string literal (quoted; `"`, `\\` and control characters escaped,
/// everything else as it is).
public func jsonString(_ s: String) -> String {
    var writer = JSONWriter()
    writer.reserveCapacity(s.utf8.count + 2)
    writer.writeString(s)
    return writer.text
}
