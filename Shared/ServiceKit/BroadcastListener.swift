import FoundationEssentials
import Kafka
import Platform
import Schema

/// Delivers a topic's events to every replica of a service, not to one of them: each process
/// joins a consumer group of its own (`<group>-broadcast-<instance>`), starting at the newest
/// offset, and commits nothing that matters. For in-memory state every replica must drop when
/// it changes (compiled rulesets, settings); the change itself is in the database, so a missed
/// event only delays the refresh until the cache's own expiry. It reads from the end the logs
/// had when it started (``KafkaConsumer``'s `startingNow`), not from where they end when the
/// group assigns them seconds later: changes made elsewhere while it starts are seen too
/// (before, they waited for the cache's expiry).
public final class BroadcastListener: Service {
    public let name = "broadcast-listener"
    private let consumer: KafkaConsumer
    private let logger: Logger
    private let handler: @Sendable (EventEnvelope) async -> Void
    private let types: Set<String>

    /// - Parameters:
    ///   - types: the event types wanted; others are skipped by their `ce_type` header, without
    ///     decoding (the topic may carry many events of other types).
    ///   - handler: called with each decodable event of those types; errors are the handler's.
    public init(
        configuration: ServiceConfiguration, topics: [String], types: Set<String>, logger: Logger,
        handler: @escaping @Sendable (EventEnvelope) async -> Void
    ) throws {
        self.logger = logger
        self.handler = handler
        self.types = types
        consumer = try KafkaConsumer(
            configuration: configuration.kafka, groupID: "\(configuration.consumerGroup)-broadcast-\(configuration.instanceID)", topics: topics,
            logger: logger, overrides: ["auto.offset.reset": "latest"], startingNow: true)
    }

    public func run() async throws {
        await consumer.run(maxBatch: 256) { [handler, logger, types] batch in
            for record in batch {
                guard let type = record.header(CloudEventHeader.type), types.contains(type) else { continue }
                do {
                    let envelope = try EventEnvelope(record: record)
                    await handler(envelope)
                } catch {
                    logger.debug("broadcast record ignored", metadata: [LogKey.error: "\(error)"])
                }
            }
            return batch.count
        }
    }

    public func shutdown() async { await consumer.shutdown() }
}
