import Foundation
import Kafka
import Platform
import Schema

/// Delivers a topic's events to every replica of a service, not to one of them: each process
/// joins a consumer group of its own (`<group>-broadcast-<instance>`), starting at the newest
/// offset, and commits nothing that matters. For in-memory state every replica must drop when
/// it changes (compiled rulesets, settings); the change itself is in the database, so a missed
/// event only delays the refresh until the cache's own expiry.
public final class BroadcastListener: Service {
    public let name = "broadcast-listener"
    private let consumer: KafkaConsumer
    private let logger: Logger
    private let handler: @Sendable (EventEnvelope) async -> Void

    /// - Parameter handler: called with each decodable event; errors are the handler's to log.
    public init(
        configuration: ServiceConfiguration, topics: [String], logger: Logger, handler: @escaping @Sendable (EventEnvelope) async -> Void
    ) throws {
        self.logger = logger
        self.handler = handler
        consumer = try KafkaConsumer(
            configuration: configuration.kafka, groupID: "\(configuration.consumerGroup)-broadcast-\(configuration.instanceID)", topics: topics,
            logger: logger, overrides: ["auto.offset.reset": "latest"])
    }

    public func run() async throws {
        await consumer.run { [handler, logger] record in
            do {
                let envelope = try EventEnvelope(record: record)
                await handler(envelope)
            } catch {
                logger.debug("broadcast record ignored", metadata: [LogKey.error: "\(error)"])
            }
            return true
        }
    }

    public func shutdown() async { await consumer.shutdown() }
}
