import Foundation
import JSON
import Testing
@testable import Platform

/// A log line as written: its fields gathered in order of precedence, sorted, escaped, and its
/// time, read back with Foundation's JSON parser and date formatter (independent readings).
@Suite struct LogLineTests {
    /// Strings a line must carry intact: quotes, backslashes, every control character, DEL,
    /// non-ASCII (two-, three- and four-byte UTF-8), and a plain ASCII run.
    static let awkward: [String] = [
        "", "plain ascii", "quote \" and backslash \\ and slash /", "line\nfeed\rtab\tbell\u{07}nul\u{00}",
        String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }), "del\u{7F}", "é ü ß", "€ 中文", "emoji 🔐 and \u{10FFFF}",
    ]

    static func parse(_ bytes: [UInt8]) throws -> [String: Any] {
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false, "one line per record")
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes.dropLast())) as? [String: Any])
    }

    @Test func fieldsTakeTheirPrecedenceAndAreWrittenSorted() throws {
        var logger = Logger(label: "signet.test", level: .info, metadata: [LogKey.service: "authentication", LogKey.tenant: "from-logger"])
        logger.request = Logger.RequestMetadata(requestID: "r-1", traceID: "t-1", spanID: "s-1", route: "/v1/x", tenant: "from-request")
        var fields = logger.lineFields([LogKey.status: "200", LogKey.route: "/from-extra"])
        // extra, then the logger's metadata, then the request's fields; each key once.
        let byKey = Dictionary(uniqueKeysWithValues: fields.pairs.map { ($0.key, $0.value) })
        #expect(fields.pairs.count == byKey.count)
        #expect(byKey == [
            LogKey.status: "200", LogKey.route: "/from-extra", LogKey.service: "authentication", LogKey.tenant: "from-logger",
            LogKey.requestID: "r-1", LogKey.traceID: "t-1", LogKey.spanID: "s-1",
        ])
        let sink = LogSink(format: .json)
        let bytes = sink.render(label: "signet.test", level: .info, message: "request", fields: &fields, file: "F.swift", line: 7, now: (0, 0))
        let text = String(decoding: bytes, as: UTF8.self)
        // Members in the order written: time, level, logger, msg, then the fields by key.
        let keys = fields.pairs.map(\.key)
        #expect(keys == keys.sorted())
        var last = text.startIndex
        for key in ["time", "level", "logger", "msg"] + keys {
            let range = try #require(text.range(of: "\"\(key)\":", range: last..<text.endIndex), "\(key) in order")
            last = range.upperBound
        }
        let object = try Self.parse(bytes)
        #expect(object["level"] as? String == "info" && object["logger"] as? String == "signet.test" && object["msg"] as? String == "request")
        #expect(object["time"] as? String == "1970-01-01T00:00:00.000Z")
        #expect(object["source"] == nil, "the source only from warning up")
        for (key, value) in byKey { #expect(object[key] as? String == value) }
    }

    @Test func aTracedLineWithoutARequestNamesTheTrace() throws {
        let logger = Logger(label: "signet.test", level: .info)
        #expect(!logger.lineFields(nil).contains(LogKey.traceID))
        let trace = TraceContext(traceID: "0af7651916cd43dd8448eb211c80319c", spanID: "b7ad6b7169203331", parentSpanID: nil, sampled: true, traceState: nil)
        TraceContext.$current.withValue(trace) {
            let pairs = logger.lineFields([LogKey.spanID: "given"]).pairs
            #expect(pairs.first { $0.key == LogKey.traceID }?.value == trace.traceID)
            // The trace's span replaces a given one, as when the two were merged as dictionaries.
            #expect(pairs.filter { $0.key == LogKey.spanID }.map(\.value) == [trace.spanID])
            // A line that names its trace keeps it.
            let named = logger.lineFields([LogKey.traceID: "mine"]).pairs
            #expect(named.first { $0.key == LogKey.traceID }?.value == "mine" && !named.contains { $0.key == LogKey.spanID })
        }
    }

    @Test func awkwardTextIsEscapedAndReadsBackIntact() throws {
        let sink = LogSink(format: .json)
        for (i, s) in Self.awkward.enumerated() {
            var fields = LogFields(capacity: 2)
            fields.append("k\"\(i)", s)
            fields.append("plain", "v")
            let bytes = sink.render(label: s, level: .error, message: s, fields: &fields, file: "Dir/File.swift", line: 42, now: (1_764_000_000, 250))
            let object = try Self.parse(bytes)
            #expect(object["msg"] as? String == s && object["logger"] as? String == s && object["k\"\(i)"] as? String == s, "\(i)")
            #expect(object["source"] as? String == "Dir/File.swift:42" && object["level"] as? String == "error")
            #expect(object["time"] as? String == "2025-11-24T16:00:00.250Z")
            // jsonString, the same escaper on its own, reads back as the string it was given.
            let literal = jsonString(s)
            #expect(try JSONSerialization.jsonObject(with: Data(literal.utf8), options: .fragmentsAllowed) as? String == s, "\(i)")
        }
    }

    @Test func textLinesKeepTheirFormat() {
        let sink = LogSink(format: .text)
        var fields = LogFields(capacity: 2)
        fields.append("b", "2")
        fields.append("a", "1")
        let line = sink.render(label: "signet.test", level: .notice, message: "started", fields: &fields, file: "F.swift", line: 1, now: (1_764_000_000, 7))
        #expect(String(decoding: line, as: UTF8.self) == "2025-11-24T16:00:00.007Z notice signet.test: started a=1 b=2\n")
    }

    /// The timestamp against Foundation's ISO 8601 formatter (with fractional seconds) over
    /// times from 1970 to 9999, leap days and the ends of months and years among them.
    @Test func timestampsAgreeWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        let formatter = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var seconds: [Int64] = [0, 59, 86_399, 86_400, 951_782_400, 951_868_799, 1_709_164_800, 4_107_542_399, 253_402_300_799]
        for _ in 0..<2_000 { seconds.append(Int64.random(in: 0..<253_402_300_800, using: &generator)) }
        for s in seconds {
            let ms = Int.random(in: 0...999, using: &generator)
            var writer = JSONWriter()
            writer.writeUTCTimestamp(seconds: s, milliseconds: ms, quoted: false)
            let expected = formatter.format(Date(timeIntervalSince1970: Double(s) + Double(ms) / 1000 + 0.0002))
            #expect(writer.text == expected, "\(s).\(ms)")
        }
    }
}
