import Foundation
import Kafka
import Platform
import Postgres
import Schema
import ServiceKit
import Synchronization
import Testing
import TestSupport

/// The first event that crosses all five services: tenants, with the broker failing, events
/// replayed and malformed. Needs the stack `make test` starts.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(5)))
struct TenantPropagationTests {
    @Test func aTenantCreatedOnRegistrationReachesEveryService() async throws {
        try TestStack.require()
        let id = Stack.newTenantID("prop")
        let created = try await Stack.putTenant(id)
        #expect(created.status == 201)
        let body = try created.json()
        #expect(body["id"] as? String == id && body["rpId"] as? String == "example.com")
        for service in Stack.consumers {
            let seen = await TestStack.eventually { await Stack.sees(service, id) }
            #expect(seen, "tenant not visible on \(service.rawValue)")
        }
        // Through the gateway too.
        let viaGateway = try await TestHTTP.send("GET", "http://127.0.0.1:8080/pii/v1/tenants/\(id)")
        #expect(viaGateway.status == 200)

        // An update is a new revision everywhere; the same body again is no change.
        let updated = try await Stack.putTenant(id, name: "Renamed")
        #expect(updated.status == 200)
        #expect(try updated.json()["revision"] as? Int == 2)
        let again = try await Stack.putTenant(id, name: "Renamed")
        #expect(try again.json()["revision"] as? Int == 2)
        for service in Stack.consumers {
            let seen = await TestStack.eventually { await Stack.sees(service, id, displayName: "Renamed") }
            #expect(seen, "update not visible on \(service.rawValue)")
        }
    }

    @Test func aBrokerOutageDelaysEventsButLosesNoneAndAppliesThemOnce() async throws {
        try TestStack.require()
        try TestStack.signalBroker(SIGUSR1)  // broker down
        let id = Stack.newTenantID("outage")
        let created: TestHTTP.Response
        do {
            // The request succeeds while Kafka is down: the event waits in the outbox.
            created = try await Stack.putTenant(id)
        } catch {
            try TestStack.signalBroker(SIGUSR2)
            throw error
        }
        try await Task.sleep(for: .seconds(2))
        let visibleDuringOutage = await Stack.sees(.authentication, id)
        // Requests succeed, but the instance says it is degraded with a status load balancers
        // act on: its events do not flow.
        let readiness = try? await TestHTTP.send("GET", "\(Stack.registration)/readyz")
        let reg = TestStack.pool(database: "signet_registration", size: 1)
        defer { reg.close() }
        let pending = try await reg.withConnection {
            try await $0.query("SELECT event_id, sent_at FROM outbox WHERE subject = \(id)")
        }
        try TestStack.signalBroker(SIGUSR2)  // broker up
        #expect(created.status == 201)
        #expect(!visibleDuringOutage)
        #expect(readiness?.status == 503)
        #expect((try? readiness?.json())??["status"] as? String == "degraded")
        #expect(pending.count == 1)
        #expect(pending.first?.string("sent_at") == nil, "the event should still be unsent while the broker is down")
        let eventID = try #require(pending.first?.string("event_id"))

        for service in Stack.consumers {
            let seen = await TestStack.eventually(timeout: .seconds(60)) { await Stack.sees(service, id) }
            #expect(seen, "tenant not visible on \(service.rawValue) after the broker came back")
            #expect(try await Stack.processedCount(service, eventID: eventID) == 1)
        }
        // Sent: moved from the outbox to outbox_sent with its time.
        let sent = try await reg.withConnection {
            try await $0.query(
                "SELECT (SELECT sent_at FROM outbox_sent WHERE event_id = \(eventID)) AS sent_at, (SELECT count(*) FROM outbox WHERE event_id = \(eventID)) AS n")
        }
        #expect(sent.first?.string("sent_at") != nil && sent.first?.int("n") == 0)
    }

    @Test func aReplayedEventHasNoSecondEffect() async throws {
        try TestStack.require()
        let id = Stack.newTenantID("dup")
        let producer = try Stack.producer()
        let first = TenantUpserted(tenantId: id, displayName: "First", rpId: "example.com", origins: ["https://example.com"], revision: 1, updatedAt: Date())
        let envelope = try EventEnvelope(first, source: ServiceName.registration.eventSource, subject: id)
        try await producer.send(envelope.kafkaMessage(topic: Topic.registration, key: id))
        for service in Stack.consumers {
            #expect(await TestStack.eventually { await Stack.sees(service, id, displayName: "First") })
        }
        // The same event id again, carrying a higher revision: only deduplication can stop it.
        var replay = first
        replay.displayName = "Replayed"
        replay.revision = 5
        var replayEnvelope = try EventEnvelope(replay, source: ServiceName.registration.eventSource, subject: id)
        replayEnvelope.id = envelope.id
        try await producer.send(replayEnvelope.kafkaMessage(topic: Topic.registration, key: id))
        // A sentinel on the same key (same partition, so processed after the replay).
        let sentinel = TenantAPIKeyCreated(tenantId: id, keyId: "k_00000000deadbeef", keyHash: String(repeating: "0", count: 64), createdAt: Date())
        let sentinelEnvelope = try EventEnvelope(sentinel, source: ServiceName.registration.eventSource, subject: id)
        try await producer.send(sentinelEnvelope.kafkaMessage(topic: Topic.registration, key: id))
        for service in Stack.consumers {
            let sentinelSeen = await TestStack.eventually { (try? await Stack.processedCount(service, eventID: sentinelEnvelope.id)) == 1 }
            #expect(sentinelSeen, "sentinel not processed on \(service.rawValue)")
            #expect(await Stack.sees(service, id, displayName: "First"), "the replay changed \(service.rawValue)")
            #expect(try await Stack.processedCount(service, eventID: envelope.id) == 1)
        }
    }

    @Test func malformedEventsGoToEachServicesDeadLetterTopic() async throws {
        try TestStack.require()
        let producer = try Stack.producer()
        let marker = UUID().uuidString.lowercased()
        // A known type whose data does not fit it.
        let bad = EventEnvelope(
            id: marker, source: "/signet/test", type: TenantUpserted.eventType, subject: "x",
            data: Array(#"{"tenantId":42,"displayName":null}"#.utf8))
        try await producer.send(bad.kafkaMessage(topic: Topic.registration, key: "malformed"))
        // And one without CloudEvents attributes at all.
        let bareMarker = UUID().uuidString.lowercased()
        try await producer.send(KafkaOutgoingMessage(topic: Topic.registration, key: "bare", value: Array(bareMarker.utf8)))

        for service in Stack.consumers {
            let topic = Topic.deadLetter(service: service)
            let consumer = try KafkaConsumer(
                configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "dlq-reader"),
                groupID: "dlq-reader-\(UUID().uuidString)", topics: [topic], logger: TestStack.quietLogger)
            let found = PlainLock<[String: String]>([:])  // marker → reason
            let run = Task {
                await consumer.run { record in
                    let reason = record.header(CloudEventHeader.deadLetterReason) ?? ""
                    if record.header("ce_id") == marker { found.withLock { $0[marker] = reason } }
                    if String(decoding: record.value, as: UTF8.self) == bareMarker { found.withLock { $0[bareMarker] = reason } }
                    return true
                }
            }
            let ok = await TestStack.eventually(timeout: .seconds(60)) { found.withLock { $0.count } == 2 }
            await consumer.shutdown()
            await run.value
            #expect(ok, "malformed events not found on \(topic)")
            let reasons = found.withLock { $0 }
            #expect(reasons[marker]?.contains("invalid event data") == true, "reason on \(topic): \(reasons[marker] ?? "-")")
            #expect(reasons[bareMarker]?.contains("missing CloudEvents attribute") == true)
        }
        // Processing continued past them: a fresh tenant still propagates.
        let id = Stack.newTenantID("after-dlq")
        #expect(try await Stack.putTenant(id).status == 201)
        for service in Stack.consumers {
            #expect(await TestStack.eventually { await Stack.sees(service, id) })
        }
    }
}
