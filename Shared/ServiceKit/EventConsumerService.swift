import Foundation
import Kafka
import Platform
import Postgres
import Schema

/// Handlers for the event types a service consumes, by CloudEvents type.
public struct EventHandlers: Sendable {
    public typealias Handler = @Sendable (EventEnvelope, PostgresConnection) async throws -> Void
    var handlers: [String: Handler] = [:]

    public init() {}

    /// Handles `P`: the payload is decoded and validated first; `body` runs inside the
    /// transaction that records the event id, so the effect and the dedupe commit together.
    public mutating func on<P: EventPayload>(_: P.Type, _ body: @escaping @Sendable (P, EventEnvelope, PostgresConnection) async throws -> Void) {
        handlers[P.eventType] = { envelope, conn in
            let payload = try envelope.decode(P.self)
            try payload.validate()
            try await body(payload, envelope, conn)
        }
    }

    public var isEmpty: Bool { handlers.isEmpty }
}

/// Consumes a service's topics as its consumer group, idempotently, with a dead-letter topic.
///
/// Per record: the CloudEvent is read from the headers; a type the service does not handle is
/// skipped; otherwise, in one transaction, the event id is inserted into `processed_events`
/// (a duplicate stops here: no second effect) and the handler applies the effect. A record
/// that cannot be processed (bad attributes, undecodable or invalid data, or a handler that
/// keeps failing) goes to `signet.<service>.dlq` with the reason; a database outage is
/// retried without committing the offset, so nothing is skipped.
public final class EventConsumerService: Service {
    public let name = "event-consumer"
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let pool: PostgresPool
    let handlers: EventHandlers
    let service: ServiceName
    let groupID: String
    let logger: Logger
    let maxHandlerAttempts: Int
    private let stopping = AtomicFlag(false)
    /// `signet_events_consumed_total` by outcome, made once (not per event).
    private let counters: (applied: Counter, duplicate: Counter, skipped: Counter)

    public init(
        service: ServiceName, kafka: KafkaConfiguration, producer: KafkaProducer, pool: PostgresPool, handlers: EventHandlers,
        logger: Logger, maxHandlerAttempts: Int = 5, groupID: String? = nil
    ) throws {
        self.service = service
        self.producer = producer
        self.pool = pool
        self.handlers = handlers
        self.logger = logger
        self.maxHandlerAttempts = maxHandlerAttempts
        self.groupID = groupID ?? service.consumerGroup
        func counter(_ outcome: String) -> Counter {
            Counter(label: "signet_events_consumed_total", dimensions: [("service", service.rawValue), ("outcome", outcome)])
        }
        counters = (counter("applied"), counter("duplicate"), counter("skipped"))
        consumer = try KafkaConsumer(configuration: kafka, groupID: self.groupID, topics: service.consumedTopics, logger: logger)
    }

    public func run() async throws {
        // On the blocking executor, like HTTP handlers: each event's transaction runs its libpq
        // calls inline instead of hopping to a connection queue and back.
        await withTaskExecutorPreference(BlockingExecutor.shared) {
            await consumer.run { record in
                await self.process(record) != .abandoned
            }
        }
    }

    public func shutdown() async {
        stopping.set(true)
        await consumer.shutdown()
    }

    enum Outcome: Equatable {
        case applied, duplicate, skipped, deadLettered
        /// Not processed because the service is stopping; the offset stays uncommitted.
        case abandoned
    }

    @discardableResult
    func process(_ record: KafkaRecord) async -> Outcome {
        var logger = self.logger
        logger[metadataKey: LogKey.topic] = .string(record.topic)
        logger[metadataKey: LogKey.partition] = .string(String(record.partition))
        logger[metadataKey: LogKey.offset] = .string(String(record.offset))
        let envelope: EventEnvelope
        do {
            envelope = try EventEnvelope(record: record)
        } catch {
            return await deadLetter(record, reason: "\(error)", logger: logger)
        }
        logger[metadataKey: LogKey.eventID] = .string(String(envelope.id.prefix(64)))
        logger[metadataKey: LogKey.eventType] = .string(String(envelope.type.prefix(128)))
        guard let handler = handlers.handlers[envelope.type] else {
            counters.skipped.increment()
            return .skipped
        }
        var attempt = 0
        var backoff = Duration.milliseconds(100)
        while true {
            attempt += 1
            do {
                let applied = try await pool.withTransaction { conn -> Bool in
                    let inserted = try await conn.query(
                        """
                        INSERT INTO processed_events (event_id, event_type, topic, kafka_partition, kafka_offset)
                        VALUES (\(envelope.id), \(envelope.type), \(record.topic), \(Int(record.partition)), \(record.offset))
                        ON CONFLICT (event_id) DO NOTHING
                        """)
                    if inserted.affectedRows == 0 { return false }
                    try await handler(envelope, conn)
                    return true
                }
                let outcome: Outcome = applied ? .applied : .duplicate
                (applied ? counters.applied : counters.duplicate).increment()
                logger.debug(applied ? "event applied" : "duplicate event ignored")
                return outcome
            } catch let error as EventDecodingError {
                return await deadLetter(record, reason: error.description, logger: logger)
            } catch let error as PostgresError where error.isConnectionError || error.code == .poolClosed {
                // The database is unavailable: retry the same record until it is back (or we
                // are shutting down, in which case the uncommitted offset re-delivers it).
                if stopping.isSet { return .abandoned }
                logger.warning("database unavailable while consuming; retrying", metadata: [LogKey.error: "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
                attempt = 0
            } catch {
                if attempt >= maxHandlerAttempts {
                    return await deadLetter(record, reason: "handler failed \(attempt) times: \(error)", logger: logger)
                }
                logger.warning("event handler failed; retrying", metadata: [LogKey.error: "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Publishes the record unchanged to the dead-letter topic, with the reason, retrying
    /// until the broker takes it: a record is never dropped silently.
    private func deadLetter(_ record: KafkaRecord, reason: String, logger: Logger) async -> Outcome {
        let topic = Topic.deadLetter(service: service)
        var headers = record.headers.map { (name: $0.name, value: String(decoding: $0.value, as: UTF8.self)) }
        headers.append((CloudEventHeader.deadLetterReason, String(reason.prefix(512))))
        headers.append((CloudEventHeader.deadLetterGroup, groupID))
        headers.append((CloudEventHeader.deadLetterOrigin, "\(record.topic)/\(record.partition)/\(record.offset)"))
        let key = record.key.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let message = KafkaOutgoingMessage(topic: topic, key: key, value: record.value, headers: headers)
        var backoff = Duration.milliseconds(100)
        while true {
            do {
                try await producer.send(message)
                break
            } catch {
                logger.warning("dead-letter publish failed; retrying", metadata: [LogKey.error: "\(error)"])
                if stopping.isSet { return .abandoned }
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
        Counter(label: "signet_events_consumed_total", dimensions: [("service", service.rawValue), ("outcome", "dead_lettered")]).increment()
        logger.error("event dead-lettered", metadata: ["signet.reason": .string(String(reason.prefix(200))), "signet.dlq.topic": .string(topic)])
        return .deadLettered
    }
}
