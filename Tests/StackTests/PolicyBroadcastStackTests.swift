import Foundation
import Kafka
import Schema
import Testing
import TestSupport

/// Rulesets are compiled in memory on every replica and refreshed by events: a second
/// authentication replica (same database, a consumer group of its own for its read model) sees
/// a ruleset changed through the first one at once, long before its cache would expire. The
/// events travel on `signet.authentication.policy`, not on the sign-in events' topic.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct PolicyBroadcastStackTests {
    let adaptive = AdaptiveSignInStackTests()

    @Test func aRulesetChangedOnOneReplicaAppliesOnAnother() async throws {
        try TestStack.require()
        _ = try #require(TestStack.binDir, "SIGNET_BIN_DIR is not set")
        let t = try await adaptive.tenant()
        let port = 18282
        // Its read-model consumer in a group of its own (duplicates are ignored by event id), so
        // that the stack's service keeps its partitions for the tests that follow. Its
        // session-signing key does not matter here (the stack's is used when exported).
        var environment = [
            "SIGNET_HTTP_PORT": String(port), "SIGNET_LOG_LEVEL": "warning", "SIGNET_INSTANCE_ID": "broadcast-test-replica",
            "SIGNET_KAFKA_CONSUMER_GROUP": "signet-authentication-broadcast-test",
        ]
        if TestStack.environment["SIGNET_SIGNING_KEY_FILE"] == nil { environment["SIGNET_EPHEMERAL_SIGNING_KEY"] = "1" }
        let (process, logPath) = try TestStack.launch("signet-authentication", environment: environment, logName: "authentication-replica")
        defer { process.terminate() }
        let replica = "http://127.0.0.1:\(port)/v1/tenants/\(t.id)/signins"
        #expect(await TestStack.becomesReady("http://127.0.0.1:\(port)"))
        // Its policy listener (a consumer group of its own, from the newest offset) has joined.
        // Before that, a change made elsewhere reaches it only through the cache's expiry.
        #expect(await TestStack.eventually(timeout: .seconds(60)) {
            let metrics = (try? await TestHTTP.send("GET", "http://127.0.0.1:\(port)/metrics", timeout: 2))?.text ?? ""
            return metrics.contains(#"signet_kafka_consumer_assigned_partitions{group="signet-authentication-broadcast-test-broadcast-broadcast-test-replica"} 3"#)
        })
        // Assigned partitions start from the newest offset once librdkafka has looked it up; a
        // change in between would reach this replica only through its cache's expiry (60 s).
        try await Task.sleep(for: .seconds(3))
        func startOnReplica() async throws -> SignInStarted? {
            let r = try await TestHTTP.send(
                "POST", replica, headers: ["Content-Type": "application/json", "X-Forwarded-For": "198.51.100.9"], body: Array(#"{"username": "mia"}"#.utf8))
            return try? AdaptiveSignInStackTests.decode(SignInStarted.self, r)
        }
        // The replica compiles the tenant's (default) policy and caches it.
        #expect(try await startOnReplica()?.matchedRule == "default")
        // Changed through the first replica: the second applies it once the event arrives.
        #expect(try await adaptive.putRuleset(t, AdaptiveSignInStackTests.ruleset).status == 200)
        let applied = await TestStack.eventually(timeout: .seconds(20)) { (try? await startOnReplica())?.matchedRule == "blocked-network" }
        #expect(applied, "the second replica kept its cached policy; see \(logPath)")
    }

    /// The change is written to the database as another replica writes it (so this replica's
    /// compiled copy, cached for a minute, is not dropped by it), then announced. This
    /// replica signs in by the old rules until the announcement arrives on the policy topic,
    /// and by the new ones afterwards, well before its copy would have expired; the same
    /// announcement on `signet.authentication` is not listened to.
    @Test func aChangeByAnotherReplicaArrivesOnThePolicyTopic() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        func store(_ name: String, version: Int) async throws {
            let document = #"{"rules":[{"action":"ALLOW","name":"\#(name)"}]}"#
            try await pool.withConnection { conn in
                try await conn.query(
                    """
                    INSERT INTO rulesets (tenant_id, kind, version, document, updated_at)
                    VALUES (\(t.id), 'authentication', \(version), \(document), \(Date()))
                    ON CONFLICT (tenant_id, kind) DO UPDATE SET version = EXCLUDED.version, document = EXCLUDED.document
                    """)
            }
        }
        func matchedRule() async throws -> String? {
            let r = try await TestHTTP.send(
                "POST", "http://127.0.0.1:8082/v1/tenants/\(t.id)/signins", headers: ["Content-Type": "application/json", "X-Forwarded-For": "203.0.113.7"],
                body: Array(#"{"signals":{},"context":{}}"#.utf8))
            return try r.json()["matchedRule"] as? String
        }
        func announce(on topic: String) async throws {
            let change = AuthenticationPolicyChanged(tenantId: t.id, part: "authentication", version: 2, changedAt: Date())
            let envelope = try EventEnvelope(change, source: ServiceName.authentication.eventSource, subject: t.id)
            let producer = try Stack.producer()
            try await producer.send(envelope.kafkaMessage(topic: topic, key: t.id))
        }

        try await store("first", version: 1)
        #expect(try await matchedRule() == "first")
        try await store("second", version: 2)
        #expect(try await matchedRule() == "first", "the compiled copy was not cached")
        try await announce(on: Topic.authentication)
        try await Task.sleep(for: .seconds(2))
        #expect(try await matchedRule() == "first", "a policy change on the sign-in topic was listened to")
        try await announce(on: Topic.authenticationPolicy)
        #expect(await TestStack.eventually(timeout: .seconds(30)) { (try? await matchedRule()) == "second" })
    }
}
