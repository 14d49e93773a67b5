import FoundationEssentials
import Kafka
import Platform
import Postgres
import Schema

/// Thrown by a handler when a service it needs cannot be reached: the consumer retries the
/// event (with backoff, its offset uncommitted) until the service answers, as it does when the
/// database is down, instead of dead-lettering it.
public struct EventDependencyUnavailable: Error, CustomStringConvertible {
    public var dependency: String
    public init(dependency: String) { self.dependency = dependency }
    public var description: String { "\(dependency) unavailable" }
}

/// Handlers for the event types a service consumes, by CloudEvents type.
public struct EventHandlers: Sendable {
    public typealias Handler = @Sendable (EventEnvelope, PostgresConnection) async throws -> Void
    public typealias BatchHandler = @Sendable ([EventEnvelope], PostgresConnection) async throws -> Void
    var handlers: [String: Handler] = [:]
    /// Types whose consecutive events may be applied by one call (see ``onBatch(_:_:)``).
    var batchHandlers: [String: BatchHandler] = [:]
    /// Types whose effect is idempotent by construction (``onBatch(_:idempotent:_:)``): their
    /// event ids are not recorded in `processed_events`.
    var idempotentTypes: Set<String> = []
    /// The most records the consumer takes from Kafka at once. A batch is processed before
    /// the next poll, and librdkafka drops a member that does not poll within
    /// `max.poll.interval.ms` (300 s): set it to 1 when a handler may take seconds (a call
    /// outside the database, retried), as the delivery of one-time codes does.
    public var maxBatch = 256
    /// The topics the handled types are published on: what the consumer subscribes to.
    public private(set) var topics: [String] = []

    public init() {}

    /// The CloudEvents types handled.
    public var eventTypes: [String] { handlers.keys.sorted() }

    private mutating func consume(_ topic: String) {
        if !topics.contains(topic) { topics.append(topic) }
    }

    /// Handles `P`: the payload is decoded and validated first; `body` runs inside the
    /// transaction that records the event id, so the effect and the dedupe commit together.
    public mutating func on<P: EventPayload>(_: P.Type, _ body: @escaping @Sendable (P, EventEnvelope, PostgresConnection) async throws -> Void) {
        handlers[P.eventType] = { envelope, conn in
            let payload = try envelope.decode(P.self)
            try payload.validate()
            try await body(payload, envelope, conn)
        }
        idempotentTypes.remove(P.eventType)
        consume(P.topic)
    }

    /// Handles `P` a run of events at a time: consecutive events of this type in a polled batch
    /// (already deduplicated, in order) reach `body` together, inside the batch's transaction;
    /// a single event comes as a run of one. For high-volume events whose effect can be applied
    /// by one statement (e.g. coalescing per key), instead of a statement per event.
    ///
    /// `idempotent`: the handler's effect is the same however often an event is applied and
    /// whatever older event of the type is applied after it (a "latest value" kept with a
    /// guard on its time, say). Its event ids are then not recorded in `processed_events`: a
    /// redelivered event is applied again and changes nothing, and the busiest event type
    /// costs the database no row and no index entries per event. Leave it false for any
    /// effect that accumulates (a counter, an insert without a natural key, a message sent).
    public mutating func onBatch<P: EventPayload>(
        _: P.Type, idempotent: Bool = false, _ body: @escaping @Sendable ([(payload: P, envelope: EventEnvelope)], PostgresConnection) async throws -> Void
    ) {
        let batch: BatchHandler = { envelopes, conn in
            var items: [(payload: P, envelope: EventEnvelope)] = []
            items.reserveCapacity(envelopes.count)
            for envelope in envelopes {
                let payload = try envelope.decode(P.self)
                try payload.validate()
                items.append((payload, envelope))
            }
            try await body(items, conn)
        }
        batchHandlers[P.eventType] = batch
        handlers[P.eventType] = { envelope, conn in try await batch([envelope], conn) }
        if idempotent { idempotentTypes.insert(P.eventType) } else { idempotentTypes.remove(P.eventType) }
        consume(P.topic)
    }

    /// Adds `other`'s handlers; for a type both handle, `other`'s wins.
    public mutating func merge(_ other: EventHandlers) {
        for (type, h) in other.handlers {
            handlers[type] = h
            batchHandlers[type] = other.batchHandlers[type]
            if other.idempotentTypes.contains(type) { idempotentTypes.insert(type) } else { idempotentTypes.remove(type) }
        }
        for topic in other.topics { consume(topic) }
        maxBatch = min(maxBatch, other.maxBatch)
    }

    public var isEmpty: Bool { handlers.isEmpty }

    /// Runs the handler of `envelope`'s type on `conn` (the caller's transaction), without the
    /// consumer's dedupe: for tests that feed a service its events directly.
    ///
    /// - Throws: `EventDecodingError.invalidData` when no handler takes the type; what the
    ///   handler throws.
    public func apply(_ envelope: EventEnvelope, on conn: PostgresConnection) async throws {
        guard let handler = handlers[envelope.type] else { throw EventDecodingError.invalidData("type") }
        try await handler(envelope, conn)
    }
}

/// Consumes a service's topics as its consumer group, idempotently, with a dead-letter topic.
///
/// Per record: the CloudEvent is read from the headers; a type the service does not handle is
/// skipped; otherwise, in one transaction, the event id is inserted into `processed_events`
/// (a duplicate stops here: no second effect) and the handler applies the effect. A type whose
/// effect is idempotent by construction (``EventHandlers/onBatch(_:idempotent:_:)``) records no
/// id: a redelivery is applied again and changes nothing. A record
/// that cannot be processed (bad attributes, undecodable or invalid data, or a handler that
/// keeps failing) goes to `signet.<service>.dlq` with the reason; a database outage is
/// retried without committing the offset, so nothing is skipped, and so is a service a handler
/// needs (``EventDependencyUnavailable``).
///
/// Records come in polled batches (what the consumer has fetched, up to `maxBatch`), processed
/// in order. Consecutive events of ``EventHandlers/onBatch(_:_:)`` types (database effects only)
/// are applied in one transaction: one statement records their event ids, then each run of one
/// type reaches its handler in one call. If anything in it fails, it is rolled back and its
/// records go one by one through the path above, so one bad record costs its run a retry, never
/// an effect or a dead letter it did not earn. Every other record is processed on its own.
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
        logger: Logger, maxHandlerAttempts: Int = 5, groupID: String? = nil, topics: [String]? = nil
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
        consumer = try KafkaConsumer(configuration: kafka, groupID: self.groupID, topics: topics ?? handlers.topics, logger: logger)
    }

    public func run() async throws {
        // On the blocking executor, like HTTP handlers: each event's transaction runs its libpq
        // calls inline instead of hopping to a connection queue and back.
        // A batch of events of types the service does not handle (the other services' events
        // on a topic it reads for one type) is skipped on the consumer's poll thread: reading
        // the attributes (a record that fails to read is not skippable: it is dead-lettered
        // here) and counting, without waking this task.
        let handled = Set(handlers.handlers.keys)
        let skipped = counters.skipped
        let skipping: @Sendable ([KafkaRecord]) -> Bool = { batch in
            // The type header first: a batch of handled events (most of them) is not read twice.
            let skippable = batch.allSatisfy { record in
                guard let type = record.header(CloudEventHeader.type), !handled.contains(type) else { return false }
                return (try? EventEnvelope(record: record)) != nil
            }
            if skippable { skipped.increment(by: batch.count) }
            return skippable
        }
        await withTaskExecutorPreference(BlockingExecutor.shared) {
            await consumer.run(maxBatch: handlers.maxBatch, skipping: skipping) { batch in
                await self.process(batch)
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

    /// Processes a polled batch, in order; returns how many leading records are done (all of
    /// them, unless the service is stopping). Consecutive events of ``EventHandlers/onBatch(_:_:)``
    /// types are applied together; every other record goes through ``process(_:)`` on its own,
    /// so a handler with effects outside the database (a delivery) never has them repeated
    /// because another record of its batch failed.
    func process(_ batch: [KafkaRecord]) async -> Int {
        var done = 0
        var run: [(record: KafkaRecord, envelope: EventEnvelope)] = []
        /// Applies the pending run; false when stopping (nothing of it is done).
        func flush() async -> Bool {
            defer { run = [] }
            switch run.count {
            case 0: return true
            case 1: guard await process(run[0].record, envelope: run[0].envelope) != .abandoned else { return false }
            default: guard await applyRun(run) else { return false }
            }
            done += run.count
            return true
        }
        for record in batch {
            let envelope = try? EventEnvelope(record: record)
            if let envelope, handlers.batchHandlers[envelope.type] != nil {
                run.append((record, envelope))
                continue
            }
            guard await flush(), await process(record, envelope: envelope) != .abandoned else { return done }
            done += 1
        }
        guard await flush() else { return done }
        return done
    }

    /// A run of batch-handled events in one transaction, retried while the database is away;
    /// if it fails otherwise, record by record. False when stopping with the run not done.
    private func applyRun(_ run: [(record: KafkaRecord, envelope: EventEnvelope)]) async -> Bool {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
        while true {
            do {
                let start = Tracer.now()
                let applied = try await applyTogether(run)
                counters.applied.increment(by: applied)
                counters.duplicate.increment(by: run.count - applied)
                // One consumer span per event, each continuing its own producer's trace and
                // spanning the run's transaction (the handler ran for the run as a whole, so
                // no single trace is current while it runs).
                if Tracer.shared.isEnabled {
                    for item in run {
                        let trace = TraceContext.continuing(traceparent: item.envelope.traceparent, tracestate: item.envelope.tracestate)
                        Tracer.shared.record(SpanRecord.event(item.envelope, topic: item.record.topic, kind: .consumer, context: trace, start: start))
                    }
                }
                return true
            } catch let error as PostgresError where error.isConnectionError || error.code == .poolClosed {
                guard await waitForDatabase(after: error, backoff: &backoff, logger: logger) else { return false }
            } catch {
                logger.debug("batch not applied together; one by one", metadata: [LogKey.error: "\(error)"])
                for item in run {
                    if await process(item.record, envelope: item.envelope) == .abandoned { return false }
                }
                return true
            }
        }
    }

    /// One transaction for the batch's handled events; returns how many were new (an event of
    /// an idempotent type counts as new: nothing records whether it was seen).
    private func applyTogether(_ items: [(record: KafkaRecord, envelope: EventEnvelope)]) async throws -> Int {
        let idempotent = handlers.idempotentTypes
        let recorded = idempotent.isEmpty ? items : items.filter { !idempotent.contains($0.envelope.type) }
        return try await pool.withTransaction { conn -> Int in
            var fresh: Set<String> = []
            if !recorded.isEmpty {
                let inserted = try await conn.query(
                    """
                    INSERT INTO processed_events (event_id, event_type, topic, kafka_partition, kafka_offset)
                    SELECT * FROM unnest(\(PostgresArray(recorded.map(\.envelope.id)))::text[], \(PostgresArray(recorded.map(\.envelope.type)))::text[],
                      \(PostgresArray(recorded.map(\.record.topic)))::text[], \(PostgresArray(recorded.map { Int($0.record.partition) }))::int[],
                      \(PostgresArray(recorded.map(\.record.offset)))::bigint[])
                    ON CONFLICT (event_id) DO NOTHING
                    RETURNING event_id
                    """)
                fresh = Set(inserted.compactMap { $0.string("event_id") })
            }
            // In order; an id twice in the batch is applied once (an idempotent type's, as
            // often as it comes: the effect is the same).
            var new: [EventEnvelope] = []
            for item in items where idempotent.contains(item.envelope.type) || fresh.remove(item.envelope.id) != nil {
                new.append(item.envelope)
            }
            var i = 0
            while i < new.count {
                let type = new[i].type
                var j = i + 1
                while j < new.count, new[j].type == type { j += 1 }
                try await handlers.batchHandlers[type]?(Array(new[i..<j]), conn)
                i = j
            }
            return new.count
        }
    }

    /// Processes one record in a transaction of its own; `envelope` is the record's, when the
    /// caller has already read it.
    @discardableResult
    func process(_ record: KafkaRecord, envelope parsed: EventEnvelope? = nil) async -> Outcome {
        let envelope: EventEnvelope
        do {
            envelope = try parsed ?? EventEnvelope(record: record)
        } catch {
            return await deadLetter(record, reason: "\(error)", logger: logger(for: record))
        }
        guard let handler = handlers.handlers[envelope.type] else {
            counters.skipped.increment()
            return .skipped
        }
        var logger = logger(for: record)
        logger[metadataKey: LogKey.eventID] = .string(String(envelope.id.prefix(64)))
        logger[metadataKey: LogKey.eventType] = .string(String(envelope.type.prefix(128)))
        // The event's processing continues the trace of the work that produced it (its
        // CloudEvents `traceparent`); what the handler enqueues or calls continues this span.
        let trace = TraceContext.continuing(traceparent: envelope.traceparent, tracestate: envelope.tracestate)
        let traceStart = Tracer.now()
        logger[metadataKey: LogKey.traceID] = .string(trace.traceID)
        logger[metadataKey: LogKey.spanID] = .string(trace.spanID)
        let outcome = await TraceContext.$current.withValue(trace) {
            await apply(envelope, handler: handler, record: record, logger: logger)
        }
        if Tracer.shared.isEnabled, outcome != .abandoned {
            Tracer.shared.record(
                SpanRecord.event(envelope, topic: record.topic, kind: .consumer, context: trace, start: traceStart, isError: outcome == .deadLettered))
        }
        return outcome
    }

    /// The service's logger with the record's place (topic, partition, offset): made only for a
    /// record that is applied or dead-lettered, not for each one skipped.
    private func logger(for record: KafkaRecord) -> Logger {
        var logger = self.logger
        logger[metadataKey: LogKey.topic] = .string(record.topic)
        logger[metadataKey: LogKey.partition] = .string(String(record.partition))
        logger[metadataKey: LogKey.offset] = .string(String(record.offset))
        return logger
    }

    /// Applies one event with its handler in a transaction that records its id, retrying as
    /// ``process(_:envelope:)`` describes.
    private func apply(_ envelope: EventEnvelope, handler: EventHandlers.Handler, record: KafkaRecord, logger: Logger) async -> Outcome {
        var attempt = 0
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
        while true {
            attempt += 1
            do {
                let recordsID = !handlers.idempotentTypes.contains(envelope.type)
                let applied = try await pool.withTransaction { conn -> Bool in
                    if recordsID {
                        let inserted = try await conn.query(
                            """
                            INSERT INTO processed_events (event_id, event_type, topic, kafka_partition, kafka_offset)
                            VALUES (\(envelope.id), \(envelope.type), \(record.topic), \(Int(record.partition)), \(record.offset))
                            ON CONFLICT (event_id) DO NOTHING
                            """)
                        if inserted.affectedRows == 0 { return false }
                    }
                    try await handler(envelope, conn)
                    return true
                }
                let outcome: Outcome = applied ? .applied : .duplicate
                (applied ? counters.applied : counters.duplicate).increment()
                logger.debug(applied ? "event applied" : "duplicate event ignored")
                return outcome
            } catch let error as EventDecodingError {
                return await deadLetter(record, reason: error.description, logger: logger)
            } catch let error as EventDependencyUnavailable {
                // Another service the handler needs is down (the registration service, for an
                // erasure's username): like a database outage, wait for it; never dead-letter.
                if stopping.isSet { return .abandoned }
                logger.warning("a service the event needs is unavailable; retrying", metadata: [LogKey.error: "\(error)"])
                try? await Task.sleep(for: backoff.next())
                attempt = 0
            } catch let error as PostgresError where error.isConnectionError || error.code == .poolClosed {
                // The database is unavailable: retry the same record until it is back (or we
                // are shutting down, in which case the uncommitted offset re-delivers it).
                guard await waitForDatabase(after: error, backoff: &backoff, logger: logger) else { return .abandoned }
                attempt = 0
            } catch {
                if attempt >= maxHandlerAttempts {
                    return await deadLetter(record, reason: "handler failed \(attempt) times: \(error)", logger: logger)
                }
                logger.warning("event handler failed; retrying", metadata: [LogKey.error: "\(error)"])
                try? await Task.sleep(for: backoff.next())
            }
        }
    }

    /// After a lost database: false when stopping (the caller gives up, its offsets uncommitted),
    /// else waits out `backoff` (doubled, up to 5 s) before the caller retries.
    private func waitForDatabase(after error: PostgresError, backoff: inout Backoff, logger: Logger) async -> Bool {
        if stopping.isSet { return false }
        logger.warning("database unavailable while consuming; retrying", metadata: [LogKey.error: "\(error)"])
        try? await Task.sleep(for: backoff.next())
        return true
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
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
        while true {
            do {
                try await producer.send(message)
                break
            } catch {
                logger.warning("dead-letter publish failed; retrying", metadata: [LogKey.error: "\(error)"])
                if stopping.isSet { return .abandoned }
                try? await Task.sleep(for: backoff.next())
            }
        }
        Counter(label: "signet_events_consumed_total", dimensions: [("service", service.rawValue), ("outcome", "dead_lettered")]).increment()
        logger.error("event dead-lettered", metadata: ["signet.reason": .string(String(reason.prefix(200))), "signet.dlq.topic": .string(topic)])
        return .deadLettered
    }
}
