import Foundation
import Kafka
import Platform
import Schema
import TestSupport

/// Reads every Signet topic of the stack's broker from the beginning (a consumer group of its
/// own) and reports where given strings appear: `topic/partition/offset`, the part of the
/// record (key, value or a header's name) and the event type.
enum KafkaLeakScan {
    /// A record part holding a needle.
    struct Finding: Sendable, CustomStringConvertible {
        let needle: String
        let topic: String
        let partition: Int32
        let offset: Int64
        let part: String
        let eventType: String
        var description: String { "\(needle) in \(topic)/\(partition)/\(offset) \(part) (\(eventType))" }
    }

    /// Findings of `needles` in every topic of ``Topic/all``; `sawRecords` is how many records
    /// were read (the caller checks the scan saw something). The scan ends once no record has
    /// come for `quiet` after the first one (or `limit` passes).
    static func scan(for needles: [String], quiet: Duration = .seconds(3), limit: Duration = .seconds(40)) async throws -> (findings: [Finding], sawRecords: Int) {
        let consumer = try KafkaConsumer(
            configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "leak-scan"), groupID: "leak-scan-\(RandomUUID.string())",
            topics: Topic.all, logger: TestStack.quietLogger, overrides: ["enable.auto.commit": "false"])
        let state = PlainLock<(findings: [Finding], records: Int, last: ContinuousClock.Instant?)>(([], 0, nil))
        let patterns = needles.map { ($0, Array($0.utf8)) }
        let run = Task {
            await consumer.run { record in
                var found: [Finding] = []
                let type = record.header(CloudEventHeader.type) ?? "?"
                var parts: [(String, [UInt8])] = [("value", record.value)]
                if let key = record.key { parts.append(("key", key)) }
                parts += record.headers.map { ("header \($0.name)", $0.value) }
                for (needle, bytes) in patterns {
                    for (part, content) in parts where Self.contains(content, bytes) {
                        found.append(Finding(needle: needle, topic: record.topic, partition: record.partition, offset: record.offset, part: part, eventType: type))
                    }
                }
                state.withLock {
                    $0.findings += found
                    $0.records += 1
                    $0.last = .now
                }
                return true
            }
        }
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            try await Task.sleep(for: .milliseconds(200))
            if let last = state.withLock({ $0.last }), ContinuousClock.now - last >= quiet { break }
        }
        await consumer.shutdown()
        _ = await run.value
        return state.withLock { ($0.findings, $0.records) }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in
                for i in 0...(h.count - n.count) where h[i] == n[0] {
                    if memcmp(h.baseAddress! + i, n.baseAddress!, n.count) == 0 { return true }
                }
                return false
            }
        }
    }
}
