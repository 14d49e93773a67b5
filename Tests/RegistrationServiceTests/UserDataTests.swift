import Crypto
import Foundation
import HTTPServer
import JSON
import Postgres
import Schema
@testable import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
import Tokens
@testable import RegistrationService

/// The registration service's side of a user's data, in process over a scratch database: the
/// erasure started by `DELETE …/users/{u}`, its own part erased from the purge request, the
/// receipt signed once five parts have answered, and the fetch naming the parts it could not
/// gather.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UserDataTests {
    typealias Harness = ServiceHarness<RegistrationService>

    static func count(_ h: Harness, _ sql: PostgresQuery) async throws -> Int {
        try await h.context.pool.withConnection { try await $0.query(sql) }.first?.int("n") ?? -1
    }

    /// Moves outbox rows to `outbox_sent` as the relay does once Kafka acknowledged them
    /// (``OutboxRelay/markSent(_:cluster:)``): all of them, or all but the purge requests.
    static func markSent(_ h: Harness, keepingPurgeRequests: Bool) async throws {
        let kept = keepingPurgeRequests ? UserPurgeRequested.eventType : ""
        try await h.context.pool.withConnection { conn in
            let ids = try await conn.query("SELECT id FROM outbox WHERE event_type <> \(kept)").compactMap { $0.int64("id") }
            try await conn.query(OutboxRelay.markSent(ids, cluster: "test"))
        }
    }

    static func json(_ response: HTTPResponse) throws -> JSONValue {
        try JSONParser.parse(response.body, maximumDepth: 32)
    }

    /// The last published event of type `P`, decoded.
    static func lastPublished<P: EventPayload>(_ h: Harness, _: P.Type) async throws -> P? {
        guard let data = try await h.published().last(where: { $0.type == P.eventType })?.data else { return nil }
        return try EventCoding.decode(P.self, from: Array(data.utf8))
    }

    @Test func anErasureDeletesTheUserAndCompletesWithAReceiptAtTheFifthPart() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)
        let handle = SecureRandom.bytes(32)
        try await CredentialStore(context: h.context).register(
            CredentialManagementTests.credential(SecureRandom.bytes(16), handle: handle), challenge: SecureRandom.bytes(32),
            challengeExpiresAt: Date() + 300, at: Date())
        try await MethodStore(context: h.context).insert(
            .init(id: "m_" + Hex.encode(SecureRandom.bytes(16)), tenant: "acme", username: "alice", type: "totp", sealedSecret: [1, 2, 3], createdAt: Date()),
            delivery: nil)

        let started = await h.send("DELETE", "/v1/tenants/acme/users/alice", bearer: key)
        #expect(started.status == 202)
        let erasureID = try #require(try Self.json(started)["erasureId"]?.stringValue)
        #expect(started.header("Location") == "/v1/tenants/acme/erasures/\(erasureID)")
        let request = try #require(try await Self.lastPublished(h, UserPurgeRequested.self))
        let aliceRef = h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice")
        #expect(request.erasureId == erasureID && request.subjectRef == aliceRef && request.subject == Base64URL.encode(handle))
        // The request names alice by reference only; the username stays with the erasure, for
        // the other services to ask for while it is in progress (internal token only).
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox WHERE event_type = \(UserPurgeRequested.eventType) AND data LIKE '%alice%'") == 0)
        let asked = await h.send("GET", "/v1/internal/tenants/acme/erasures/\(erasureID)/username", bearer: Harness.internalToken, headers: [("X-Signet-Service", "oob")])
        #expect(asked.status == 200 && (try? Self.json(asked))?["username"]?.stringValue == "alice", "\(asked.status)")
        #expect(await h.send("GET", "/v1/internal/tenants/acme/erasures/\(erasureID)/username", bearer: key, headers: [("X-Signet-Service", "oob")]).status == 401)
        #expect(await h.send("GET", "/v1/internal/tenants/other/erasures/\(erasureID)/username", bearer: Harness.internalToken, headers: [("X-Signet-Service", "oob")]).status == 404)

        // The relay has sent the credential's events (they are in `outbox_sent` now), not yet
        // the purge request: the erasure must find the user's events in both tables.
        try await Self.markSent(h, keepingPurgeRequests: true)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox_sent WHERE data LIKE \("%" + aliceRef + "%")") > 0)

        // This service's own part, from its own request.
        try await h.consume(request, source: .registration)
        let part = try #require(try await Self.lastPublished(h, ErasurePartCompleted.self))
        #expect(part.service == "registration" && part.tallies == ["credentials": 1, "methods": 1, "users": 1, "subjects": 1])
        // The credential's events are gone from the outbox; the purge request stays until the
        // erasure completes (the relay may have to send it again to a replaced cluster).
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o WHERE data LIKE '%alice%' AND event_type <> \(UserPurgeRequested.eventType)") == 0)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o WHERE data LIKE \("%" + aliceRef + "%") AND event_type <> \(UserPurgeRequested.eventType)") == 0)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM outbox WHERE event_type = \(UserPurgeRequested.eventType)") == 1)
        // Now the relay sends that too: the completed erasure must find it in `outbox_sent`.
        try await Self.markSent(h, keepingPurgeRequests: false)
        for table in ["users", "credentials", "user_methods"] {
            #expect(try await Self.count(h, PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \(table) WHERE username = 'alice'")) == 0, "\(table)")
        }

        // Four of five: still pending, the username kept for the parts to come.
        let now = Date()
        for service in ServiceName.allCases.dropLast() {
            try await h.consume(
                ErasurePartCompleted(tenantId: "acme", erasureId: erasureID, service: service.rawValue, tallies: ["things": 2], completedAt: now),
                source: service)
        }
        var erasure = try Self.json(await h.send("GET", "/v1/tenants/acme/erasures/\(erasureID)", bearer: key))
        #expect(erasure["status"] == "PENDING" && erasure["receipt"] == nil)
        #expect(erasure["parts"]?.arrayValue?.map { $0["status"]?.stringValue ?? "" } == ["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "PENDING"])

        // The fifth completes it (a repeated answer changes nothing).
        for _ in 0..<2 {
            try await h.consume(
                ErasurePartCompleted(tenantId: "acme", erasureId: erasureID, service: "pii", tallies: ["dataKeys": 1, "values": 2], completedAt: now),
                source: .pii)
        }
        let answered = await h.send("GET", "/v1/tenants/acme/erasures/\(erasureID)", bearer: key)
        erasure = try Self.json(answered)
        #expect(answered.status == 200 && erasure["status"] == "COMPLETED")
        let receipt = try #require(erasure["receipt"]?.stringValue)
        let jwks = await h.send("GET", "/.well-known/jwks.json")
        #expect(jwks.status == 200 && jwks.header("Content-Type") == "application/jwk-set+json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(
                issuer: "http://localhost:8080/registration", audience: "acme", requireExpiration: false, expectedType: ErasureReceipts.type))
        let claims = try verifier.verify(receipt, now: Date()).claims
        #expect(claims.id == erasureID)
        #expect(claims[claim: "tallies"]?["pii"] == ["dataKeys": 1, "values": 2])
        #expect(claims[claim: "tallies"]?["registration"] == ["things": 2])
        #expect(claims[claim: "sub"] == nil)
        // A receipt from another key does not verify.
        let other = try SigningKeyRing.ephemeral()
        #expect(throws: JOSEError.self) { try JWTVerifier(keySet: other.keySet, options: verifier.options).verify(receipt, now: Date()) }

        // No table keeps the username: not the erasure, not the outbox (the purge request and
        // the credential's events named it).
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM erasures WHERE username IS NOT NULL") == 0)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o WHERE data LIKE '%alice%'") == 0)
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o WHERE data LIKE \("%" + aliceRef + "%")") == 0)
        // A completed erasure has forgotten the username: nobody can ask for it any more.
        #expect(await h.send("GET", "/v1/internal/tenants/acme/erasures/\(erasureID)/username", bearer: Harness.internalToken, headers: [("X-Signet-Service", "oob")]).status == 404)
        // Another tenant's key sees no such erasure.
        #expect(await h.send("GET", "/v1/tenants/acme/erasures/er_00000000000000000000000000000000", bearer: key).status == 404)
        #expect(await h.send("GET", "/v1/tenants/acme/erasures/not-an-id", bearer: key).status == 404)
    }

    /// Two erasures of one user (the RP sent its DELETE twice): the first to complete drops its
    /// own purge request, not the second's still waiting for the relay, and both complete.
    /// Before, the first's scrub deleted every purge request naming the user: the second was
    /// never published and stayed PENDING, with the username, for good.
    @Test func twoErasuresOfOneUserBothComplete() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)
        func start() async throws -> String {
            let started = await h.send("DELETE", "/v1/tenants/acme/users/alice", bearer: key)
            #expect(started.status == 202)
            return try #require(try Self.json(started)["erasureId"]?.stringValue)
        }
        func complete(_ id: String) async throws {
            for service in ServiceName.allCases {
                try await h.consume(
                    ErasurePartCompleted(tenantId: "acme", erasureId: id, service: service.rawValue, tallies: [:], completedAt: Date()), source: service)
            }
        }
        func purgeRequests() async throws -> [String] {
            try await h.context.pool.withConnection { conn in
                try await conn.query(
                    """
                    SELECT data::jsonb ->> 'erasureId' AS id FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o
                    WHERE event_type = \(UserPurgeRequested.eventType) ORDER BY 1
                    """)
            }.compactMap { $0.string("id") }
        }
        let first = try await start()
        try await Self.markSent(h, keepingPurgeRequests: false)
        let second = try await start()  // not sent yet
        #expect(try await purgeRequests() == [first, second].sorted())
        try await complete(first)
        #expect(try await purgeRequests() == [second])
        try await complete(second)
        #expect(try await purgeRequests().isEmpty)
        for id in [first, second] {
            let erasure = try Self.json(await h.send("GET", "/v1/tenants/acme/erasures/\(id)", bearer: key))
            #expect(erasure["status"] == "COMPLETED")
        }
        #expect(try await Self.count(h, "SELECT count(*) AS n FROM erasures WHERE username IS NOT NULL") == 0)
    }

    @Test func anUnknownUserIsErasedWithEmptyTallies() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)
        let started = await h.send("DELETE", "/v1/tenants/acme/users/nobody", bearer: key)
        #expect(started.status == 202)
        let request = try #require(try await Self.lastPublished(h, UserPurgeRequested.self))
        #expect(request.subject == nil)
        // A request whose reference is not the erasure's user's is refused (dead-lettered), as
        // is one for an erasure this service does not have in progress.
        var forged = request
        forged.subjectRef = h.context.configuration.subjectKey.ref(tenant: "acme", username: "somebody-else")
        await #expect(throws: EventDecodingError.self) { try await h.consume(forged, source: .registration) }
        var unknown = request
        unknown.erasureId = "er_" + String(repeating: "d", count: 32)
        await #expect(throws: EventDecodingError.self) { try await h.consume(unknown, source: .registration) }
        #expect(try await Self.lastPublished(h, ErasurePartCompleted.self) == nil)
        try await h.consume(request, source: .registration)
        #expect(try await Self.lastPublished(h, ErasurePartCompleted.self)?.tallies == [:])
        // Another tenant's users are out of this key's reach.
        #expect(await h.send("DELETE", "/v1/tenants/other/users/nobody", bearer: key).status == 401)
    }

    @Test func aFetchNamesThePartsItCouldNotGather() async throws {
        // One service that accepts connections and never answers, the others refuse them.
        let silent = try SilentListener()
        defer { silent.close() }
        let h = try await Harness.withDatabase(environment: [
            "SIGNET_USER_DATA_PART_TIMEOUT_MS": "300", "SIGNET_TRANSACTION_URL": "http://127.0.0.1:\(silent.port)",
            "SIGNET_AUTHENTICATION_URL": "http://127.0.0.1:9", "SIGNET_OOB_URL": "http://127.0.0.1:9", "SIGNET_PII_URL": "http://127.0.0.1:9",
        ])
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)
        try await MethodStore(context: h.context).insert(
            .init(
                id: "m_" + Hex.encode(SecureRandom.bytes(16)), tenant: "acme", username: "alice", type: "email_otp",
                piiRef: "pii_" + Hex.encode(SecureRandom.bytes(16)), masked: "a•••@example.com", createdAt: Date()),
            delivery: nil)
        let clock = ContinuousClock()
        let start = clock.now
        let response = await h.send("GET", "/v1/tenants/acme/users/alice/data", bearer: key)
        let elapsed = clock.now - start
        let document = try Self.json(response)
        #expect(response.status == 200)
        #expect(document["parts"]?.objectValue?.keys.sorted() == ["registration"])
        #expect(document["parts"]?["registration"]?["methods"]?.arrayValue?.first?["masked"] == "a•••@example.com")
        let missing = document["missing"]?.arrayValue?.map { "\($0["service"]?.stringValue ?? ""):\($0["reason"]?.stringValue ?? "")" }
        #expect(missing == ["authentication:unavailable", "oob:unavailable", "pii:unavailable", "transaction:timeout"])
        // Bounded by the part timeout, not by the silent service (no assertion on speed: only
        // that it did not wait for the 5 s default).
        #expect(elapsed < .seconds(5))

        // The same as a ZIP: a manifest and one file per part gathered.
        let zip = await h.send("GET", "/v1/tenants/acme/users/alice/data", bearer: key, headers: [("Accept", "application/zip")])
        #expect(zip.status == 200 && zip.header("Content-Type") == "application/zip")
        let listing = try ZipArchiveTests.readWithPython(zip.body)
        #expect(listing.names == ["manifest.json", "registration.json"])
        #expect(listing.contents["manifest.json"]?.contains(#""transaction""#) == true)
    }
}
