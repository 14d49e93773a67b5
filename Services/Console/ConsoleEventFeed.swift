import Foundation
import HTTPServer
import JSON
import Kafka
import Platform
import Schema

/// One event as the console shows it: what happened, in which tenant, when. Nothing of the
/// event's data (it may name a user): the type, the tenant (the Kafka key's first part), the
/// CloudEvents id, source and time.
public struct ConsoleEvent: Sendable, Equatable, Codable {
    public let sequence: Int
    public let id: String
    public let type: String
    public let source: String
    public let tenant: String?
    public let time: String
}

/// The recent events of the topics the console may see (`SIGNET_CONSOLE_EVENT_TOPICS`), kept
/// in memory (the newest `capacity`), numbered in arrival order, with counters by type; and the
/// waiters of the live feed, woken when an event arrives.
public actor ConsoleEventBuffer {
    private var events: [ConsoleEvent] = []
    private var counts: [String: Int] = [:]
    private var next = 1
    private let capacity: Int
    private var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]

    public init(capacity: Int = 500) { self.capacity = capacity }

    /// What the listener takes of an event (the envelope's attributes and the key's tenant).
    public struct Arrival: Sendable {
        public var id, type, source: String
        public var tenant: String?
        public var time: Date
        public init(id: String, type: String, source: String, tenant: String?, time: Date) {
            (self.id, self.type, self.source, self.tenant, self.time) = (id, type, source, tenant, time)
        }
    }

    public func append(id: String, type: String, source: String, tenant: String?, time: Date) {
        append([Arrival(id: id, type: type, source: source, tenant: tenant, time: time)])
    }

    /// A polled batch's events at once (one hop to the actor per batch, not per event).
    public func append(_ arrivals: [Arrival]) {
        guard !arrivals.isEmpty else { return }
        for a in arrivals {
            events.append(ConsoleEvent(sequence: next, id: a.id, type: a.type, source: a.source, tenant: a.tenant, time: Timestamp.format(a.time)))
            next += 1
            counts[a.type, default: 0] += 1
        }
        // Trimmed to the newest `capacity` once twice as many are held: the array's elements
        // move once per `capacity` events, not on every event (a sign-in's event moved 500).
        if events.count >= 2 * capacity { events.removeFirst(events.count - capacity) }
        for waiter in waiters.values { waiter.resume() }
        waiters = [:]
    }

    /// The events after `sequence`, oldest first; nil `sequence`: the newest `recent`. At most
    /// the newest `capacity`.
    public func events(after sequence: Int?, recent: Int = 50) -> [ConsoleEvent] {
        let kept = events.suffix(capacity)
        guard let sequence else { return Array(kept.suffix(recent)) }
        return kept.filter { $0.sequence > sequence }
    }

    public var countsByType: [String: Int] { counts }

    /// Waits until an event after `sequence` is there, or `timeout` has passed.
    public func wait(after sequence: Int, timeout: Duration) async {
        if events.last.map({ $0.sequence > sequence }) ?? false { return }
        let key = UUID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.wake(key)
        }
        await withCheckedContinuation { continuation in waiters[key] = continuation }
        timer.cancel()
    }

    private func wake(_ key: UUID) {
        waiters.removeValue(forKey: key)?.resume()
    }
}

/// Feeds the buffer from Kafka: a consumer group of this process's own
/// (`signet-console-<instance>`), starting at the end the logs had when it started
/// (``KafkaConsumer``'s `startingNow`), so every replica sees every event from its start on and
/// none is taken from the services' groups. (Before, it started where the logs ended when the
/// group was assigned, seconds later: what was published meanwhile was never shown.)
///
/// It also reads `signet.registration` whatever the feed's topics, for ``OperatorsTenantEvents``
/// (the operators' passkeys' suspensions and deletions, their erasures, their tenant's FIDO
/// policy); the feed shows that topic's events only when it is one of `feedTopics`.
final class ConsoleEventListener: Service {
    let name = "event-listener"
    private let consumer: KafkaConsumer
    private let buffer: ConsoleEventBuffer
    private let feedTopics: Set<String>
    private let operatorsTenant: OperatorsTenantEvents

    init(
        configuration: KafkaConfiguration, feedTopics: [String], instance: String, buffer: ConsoleEventBuffer, operatorsTenant: OperatorsTenantEvents,
        logger: Logger
    ) throws {
        self.buffer = buffer
        self.feedTopics = Set(feedTopics)
        self.operatorsTenant = operatorsTenant
        consumer = try KafkaConsumer(
            configuration: configuration, groupID: "signet-console-\(instance)", topics: Self.topics(feed: feedTopics), logger: logger,
            overrides: ["auto.offset.reset": "latest"], startingNow: true)
    }

    /// The feed's topics and `signet.registration`, once each.
    static func topics(feed: [String]) -> [String] {
        feed.contains(Topic.registration) ? feed : feed + [Topic.registration]
    }

    func run() async throws {
        await consumer.run(maxBatch: 256) { [buffer, feedTopics, operatorsTenant] batch in
            var arrivals: [ConsoleEventBuffer.Arrival] = []
            for record in batch {
                guard let envelope = try? EventEnvelope(record: record) else { continue }
                if record.topic == Topic.registration { await operatorsTenant.apply(envelope) }
                guard feedTopics.contains(record.topic) else { continue }
                let tenant = record.key.flatMap { key in key.split(separator: UInt8(ascii: "/")).first.map { String(decoding: $0, as: UTF8.self) } }
                arrivals.append(ConsoleEventBuffer.Arrival(
                    id: envelope.id, type: envelope.type, source: envelope.source,
                    tenant: tenant.flatMap { TenantValidation.isValidTenantID($0) ? $0 : nil }, time: envelope.time))
            }
            await buffer.append(arrivals)
            return batch.count
        }
    }

    func shutdown() async { await consumer.shutdown() }
}

/// The live feed, as server-sent events: `GET /console/api/events` answers the events after
/// the `Last-Event-ID` the browser's `EventSource` sends on reconnection (the newest 50 on the
/// first connection), waiting up to `wait` for one when there are none, then ends the
/// response with `retry:` so that the browser reconnects at once. (The HTTP server answers
/// whole responses, so the stream is a sequence of short ones; `EventSource` joins them.)
/// `GET /console/api/events/counts` → `{"counts": {type: n}}` since the console started.
struct EventFeedRoutes: Sendable {
    let buffer: ConsoleEventBuffer
    let guards: ConsoleGuards
    let wait: Duration
    /// Event ids are `<epoch>.<sequence>`: an id from before a restart of the console (another
    /// epoch) counts as none, rather than hiding the new process's first events.
    let epoch = String(UInt32.random(in: 0...UInt32.max), radix: 36)

    func after(_ request: HTTPRequest) -> Int? {
        guard let id = request.header("Last-Event-ID") ?? request.query["after"], id.utf8.count <= 40 else { return nil }
        let parts = id.split(separator: ".")
        guard parts.count == 2, parts[0] == epoch else { return nil }
        return Int(parts[1])
    }

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/events", guards.at(.viewer)) { request, _ in
            let last = after(request)
            var events = await buffer.events(after: last)
            if events.isEmpty {
                await buffer.wait(after: last ?? 0, timeout: wait)
                events = await buffer.events(after: last ?? 0)
            }
            var text = "retry: 250\n\n"
            for event in events {
                let data = String(decoding: try JSONValueEncoder().encodeToBytes(event), as: UTF8.self)
                text += "id: \(epoch).\(event.sequence)\nevent: signet\ndata: \(data)\n\n"
            }
            if events.isEmpty { text += ": nothing new\n\n" }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-store")], body: Array(text.utf8))
        }
        router.get("/console/api/events/counts", guards.at(.viewer)) { _, _ in
            try .json(EventCounts(counts: await buffer.countsByType), headers: [("Cache-Control", "no-store")])
        }
    }
}

struct EventCounts: Codable, Sendable {
    let counts: [String: Int]
}
