import FoundationEssentials
import Platform
import Postgres
import Schema

/// The transactional outbox: an event is written in the same PostgreSQL transaction as the
/// state change it announces, and the ``OutboxRelay`` publishes it afterwards.
public enum Outbox {
    /// Writes `envelope` to the outbox on `connection`, which must be inside the caller's
    /// transaction.
    ///
    /// Inside traced work (``TraceContext/current``: a request, a consumed event) an envelope
    /// without a `traceparent` gets one: a producer span, child of the current span, recorded
    /// here (the event is "sent" when its transaction commits; the relay only moves it), whose
    /// id the event carries as the CloudEvents `traceparent` extension for consumers to continue.
    ///
    /// - Returns: the envelope as enqueued (with its `traceparent`).
    @discardableResult
    public static func enqueue(_ envelope: EventEnvelope, topic: String, key: String, on connection: PostgresConnection) async throws -> EventEnvelope {
        var envelope = envelope
        let start = Tracer.now()
        let producerSpan = trace(&envelope)
        let time = envelope.time
        let data = String(decoding: envelope.data, as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data, traceparent, tracestate)
            VALUES (\(envelope.id), \(topic), \(key), \(envelope.type), \(envelope.source), \(envelope.subject), \(time), \(data),
              \(envelope.traceparent), \(envelope.tracestate))
            """)
        recordPublished(envelope, topic: topic, span: producerSpan, start: start)
        return envelope
    }

    /// Gives `envelope` its producer span inside traced work (``TraceContext/current``), unless
    /// it has a `traceparent` already: sets the CloudEvents tracing extension to that span and
    /// returns it. For code that writes outbox rows itself (one statement doing more, like the
    /// authentication service's `record_assertion`); ``enqueue(_:topic:key:on:)`` does it.
    public static func trace(_ envelope: inout EventEnvelope) -> TraceContext? {
        guard envelope.traceparent == nil, let current = TraceContext.current else { return nil }
        let span = current.child()
        envelope.traceparent = span.traceparent
        envelope.tracestate = span.traceState
        return span
    }

    /// Records the producer span ``trace(_:)`` returned, once the row is written.
    public static func recordPublished(_ envelope: EventEnvelope, topic: String, span: TraceContext?, start: UInt64) {
        guard let span, Tracer.shared.isEnabled else { return }
        Tracer.shared.record(SpanRecord.event(envelope, topic: topic, kind: .producer, context: span, start: start))
    }

    /// Wraps `payload` and enqueues it on its topic.
    @discardableResult
    public static func enqueue<P: EventPayload>(
        _ payload: P, source: ServiceName, subject: String, key: String, on connection: PostgresConnection
    ) async throws -> EventEnvelope {
        let envelope = try EventEnvelope(payload, source: source.eventSource, subject: subject)
        return try await enqueue(envelope, topic: P.topic, key: key, on: connection)
    }

    /// Tables every service has: the outbox, processed event ids, and the tenant read model.
    public static let commonMigrations: [Migration] = [
        Migration(
            1, "outbox",
            """
            CREATE TABLE outbox (
                id bigserial PRIMARY KEY,
                event_id text NOT NULL UNIQUE,
                topic text NOT NULL,
                message_key text NOT NULL,
                event_type text NOT NULL,
                source text NOT NULL,
                subject text,
                event_time timestamptz NOT NULL,
                data text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                sent_at timestamptz
            );
            CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
            CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
            """),
        Migration(
            2, "processed_events",
            """
            CREATE TABLE processed_events (
                event_id text PRIMARY KEY,
                event_type text NOT NULL,
                topic text NOT NULL,
                kafka_partition integer NOT NULL,
                kafka_offset bigint NOT NULL,
                processed_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX processed_events_at ON processed_events (processed_at);
            """),
        Migration(
            3, "tenants",
            """
            CREATE TABLE tenants (
                id text PRIMARY KEY,
                display_name text NOT NULL,
                rp_id text NOT NULL,
                origins text[] NOT NULL,
                revision integer NOT NULL,
                updated_at timestamptz NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE TABLE tenant_api_keys (
                key_id text PRIMARY KEY,
                tenant_id text NOT NULL,
                key_hash text NOT NULL,
                created_at timestamptz NOT NULL,
                revoked_at timestamptz
            );
            CREATE INDEX tenant_api_keys_tenant ON tenant_api_keys (tenant_id);
            """),
        Migration(
            4, "tenant_api_keys_by_hash",
            """
            CREATE UNIQUE INDEX tenant_api_keys_hash ON tenant_api_keys (key_hash);
            """),
        // Every published row leaves a dead entry in `outbox_unsent` until vacuum; with the
        // default scale factor (20 % of a day's rows) vacuum would come too rarely. Also for
        // processed_events, which grows by one row per consumed event.
        Migration(
            5, "outbox_vacuum",
            """
            ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
                autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);
            ALTER TABLE processed_events SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
                autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);
            """),
        // The cluster that acknowledged each sent row: rows a cluster acknowledged are sent
        // again when another one replaces it (see OutboxRelay).
        Migration(
            6, "outbox_sent_cluster",
            """
            ALTER TABLE outbox ADD COLUMN sent_cluster text;
            """),
        // The CloudEvents Distributed Tracing extension of each event (W3C Trace Context).
        Migration(
            7, "outbox_trace_context",
            """
            ALTER TABLE outbox ADD COLUMN traceparent text, ADD COLUMN tracestate text;
            """),
        // Sent rows leave the outbox for `outbox_sent` (see OutboxRelay): marking a row sent is
        // a delete and an insert without an index entry instead of an update writing the row
        // again into three indexes (`sent_at` is in two partial indexes' predicates, so that
        // update was never HOT), and the outbox holds only what is unsent. `outbox_sent` has
        // the outbox's columns (no default, no index) and a BRIN on `sent_at` for the purge:
        // rows arrive in `sent_at` order.
        // Nothing is moved here and the outbox keeps its indexes: rows already marked sent in
        // place (by this release's predecessor, or by it during a rolling upgrade) stay where
        // they are until the purge deletes them a day later, so the migration costs nothing on
        // a busy database and the relay's scan of `outbox_unsent` never walks over them.
        Migration(
            8, "outbox_sent",
            """
            CREATE TABLE outbox_sent (LIKE outbox);
            ALTER TABLE outbox_sent ALTER COLUMN sent_at SET NOT NULL;
            CREATE INDEX outbox_sent_by_time ON outbox_sent USING brin (sent_at);
            """),
    ]
}

extension SpanRecord {
    /// The span of an event's publication (`producer`) or processing (`consumer`), named
    /// `<type> publish|process` with the OpenTelemetry messaging attributes. Event ids and types,
    /// topics and the tenant's id only: never the subject or the data.
    static func event(_ envelope: EventEnvelope, topic: String, kind: Kind, context: TraceContext, start: UInt64, isError: Bool = false) -> SpanRecord {
        let operation = kind == .producer ? "publish" : "process"
        return SpanRecord(
            name: "\(envelope.type) \(operation)", kind: kind, context: context, startNanos: start,
            attributes: [
                ("messaging.system", .string("kafka")), ("messaging.operation.type", .string(operation)),
                ("messaging.destination.name", .string(topic)), ("messaging.message.id", .string(String(envelope.id.prefix(64)))),
                ("cloudevents.event_type", .string(String(envelope.type.prefix(128)))),
                ("cloudevents.event_source", .string(String(envelope.source.prefix(64)))),
            ],
            isError: isError)
    }
}
