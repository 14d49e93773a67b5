import Foundation
import Platform
import Testing
import TestSupport
@testable import Kafka

@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KafkaRoundTripTests {
    /// The development broker creates the schema's topics: a dead-letter topic no service consumes.
    static let topic = "signet.registration.dlq"

    /// The broker's configuration, a producer, and a marker that tells this test's records apart.
    static func setUp() throws -> (KafkaConfiguration, KafkaProducer, String) {
        let config = KafkaConfiguration(brokers: TestStack.brokers, clientID: "signet-kafka-test")
        return (config, try KafkaProducer(configuration: config, logger: TestStack.quietLogger), UUID().uuidString)
    }

    @Test func producedMessagesArriveWithKeyHeadersAndValue() async throws {
        try TestStack.require()
        let (config, producer, marker) = try Self.setUp()
        let topic = Self.topic
        try await producer.send(KafkaOutgoingMessage(
            topic: topic, key: "tenant/\(marker)", value: Array("{\"m\":\"\(marker)\"}".utf8),
            headers: [("ce_id", marker), ("content-type", "application/json")]))
        let consumer = try KafkaConsumer(
            configuration: config, groupID: "kafka-test-\(marker)", topics: [topic], logger: TestStack.quietLogger)
        let found = FoundRecord()
        let run = Task {
            await consumer.run { record in
                if record.header("ce_id") == marker { found.set(record) }
                return true
            }
        }
        let ok = await TestStack.eventually(timeout: .seconds(30)) { found.value != nil }
        await consumer.shutdown()
        await run.value
        #expect(ok)
        let record = try #require(found.value)
        #expect(record.key.map { String(decoding: $0, as: UTF8.self) } == "tenant/\(marker)")
        #expect(String(decoding: record.value, as: UTF8.self) == "{\"m\":\"\(marker)\"}")
        #expect(record.header("content-type") == "application/json")
    }

    /// With the broker gone, librdkafka's close waits for a coordinator that cannot answer (up
    /// to the session timeout); the consumer's shutdown returns without it (close not finished),
    /// so the services stopped after the consumer are not held behind it.
    @Test func shutdownDoesNotWaitForAGoneBrokerToSeeTheConsumerLeave() async throws {
        try TestStack.require()
        let (config, producer, marker) = try Self.setUp()
        let topic = Self.topic
        try await producer.send(KafkaOutgoingMessage(
            topic: topic, key: "tenant/\(marker)", value: Array("{}".utf8), headers: [("ce_id", marker)]))
        let consumer = try KafkaConsumer(
            configuration: config, groupID: "kafka-close-test-\(marker)", topics: [topic], logger: TestStack.quietLogger)
        let found = FoundRecord()
        let run = Task {
            await consumer.run { record in
                if record.header("ce_id") == marker { found.set(record) }
                return true
            }
        }
        // In the group (the record arrived through it), then the broker goes down.
        let joined = await TestStack.eventually(timeout: .seconds(30)) { found.value != nil }
        #expect(joined)
        try TestStack.signalBroker(SIGUSR1)
        let closedInTime = await consumer.shutdown()
        try TestStack.signalBroker(SIGUSR2)
        await run.value
        #expect(!closedInTime, "the consumer's close finished while the broker was down: this test no longer shows the bound")
    }
}

extension KafkaRoundTripTests {
    /// A consumer `startingNow` (the broadcast listeners, the console's feed) sees what is
    /// published once it runs, before its group has assigned it anything, and not what was
    /// published before. With `auto.offset.reset=latest` alone it started where the logs ended
    /// at the assignment, seconds later, and what was published meanwhile was never seen.
    @Test func aConsumerStartingNowSeesWhatIsPublishedWhileItJoins() async throws {
        try TestStack.require()
        let (config, producer, marker) = try Self.setUp()
        let topic = Self.topic
        func publish(_ name: String) async throws {
            try await producer.send(KafkaOutgoingMessage(topic: topic, key: "tenant/\(marker)", value: Array("{}".utf8), headers: [("ce_id", "\(marker)-\(name)")]))
        }
        try await publish("before")
        let consumer = try KafkaConsumer(
            configuration: config, groupID: "kafka-now-test-\(marker)", topics: [topic], logger: TestStack.quietLogger,
            overrides: ["auto.offset.reset": "latest"], startingNow: true)
        let seen = Mutex<[String]>([])
        let run = Task {
            await consumer.run { record in
                if let id = record.header("ce_id"), id.hasPrefix(marker) { seen.withLock { $0.append(String(id.dropFirst(marker.count + 1))) } }
                return true
            }
        }
        // Published as soon as the ends are read, before the first poll joins the group.
        let started = await TestStack.eventually(timeout: .seconds(30), every: .milliseconds(5)) { consumer.startPositions?.recorded == true }
        #expect(started)
        try await publish("joining")
        let arrived = await TestStack.eventually(timeout: .seconds(30)) { seen.withLock { $0.contains("joining") } }
        try await publish("after")
        let after = await TestStack.eventually(timeout: .seconds(30)) { seen.withLock { $0.contains("after") } }
        await consumer.shutdown()
        await run.value
        #expect(arrived, "what was published while the consumer joined its group was skipped")
        #expect(after)
        #expect(seen.withLock { $0 } == ["joining", "after"], "exactly once each, nothing from before its start")
    }
}

final class FoundRecord: Sendable {
    private let state = Mutex<KafkaRecord?>(nil)
    var value: KafkaRecord? { state.withLock { $0 } }
    func set(_ r: KafkaRecord) { state.withLock { $0 = r } }
}

import Synchronization
