import Crypto
import Foundation
import HTTPServer
import Kafka
import Platform
import Postgres
import Schema
import ServiceKit
import TestSupport

/// One service assembled in process, as `ServiceRuntime` assembles it, for tests below the
/// whole stack: requests go through the in-process HTTP client to the same router and guards
/// production uses; with a database (a scratch PostgreSQL database of the test stack, migrated),
/// published events are read from the outbox rows and consumed events are given to the
/// handlers directly. No broker is needed: the outbox relay is never run.
public struct ServiceHarness<S: SignetService>: Sendable {
    public let context: ServiceContext
    public let assembly: ServiceAssembly
    public let router: GuardedRouter
    public let client: HTTPTestClient
    public let database: String?
    private let dropDatabase: (@Sendable () async -> Void)?

    /// The admin token and internal token the harness's services accept.
    public static var adminToken: String { "harness-admin-token-0123456789abcdef" }
    public static var internalToken: String { "harness-internal-token-0123456789abcd" }

    /// Assembles `S` over a pool that never connects: for what needs no database (the routes
    /// and their guards, the consumed topics).
    public static func offline(environment: [String: String] = [:]) async throws -> ServiceHarness {
        try await make(database: nil, drop: nil, environment: environment)
    }

    /// Assembles `S` over a new scratch database of the test stack's PostgreSQL, migrated as
    /// at start-up. Call ``close()`` at the end.
    public static func withDatabase(environment: [String: String] = [:]) async throws -> ServiceHarness {
        try TestStack.require()
        let (name, drop) = try await TestStack.scratchDatabase(prefix: "svc_\(S.name.rawValue)")
        return try await make(database: name, drop: drop, environment: environment)
    }

    /// Another replica of the service over this harness's database (not dropped by its
    /// ``close()``), assembled with `environment`: as a replica started with other settings.
    public func replica(environment: [String: String] = [:]) async throws -> ServiceHarness {
        try await Self.make(database: database, drop: nil, environment: environment)
    }

    /// The key resealer the service runs in the background, if its keys accept others.
    public var keyResealer: KeyResealer? { assembly.background.compactMap { $0 as? KeyResealer }.first }

    private static func make(database: String?, drop: (@Sendable () async -> Void)?, environment: [String: String]) async throws -> ServiceHarness {
        var values = [
            "SIGNET_ADMIN_TOKEN": adminToken, "SIGNET_INTERNAL_TOKEN": internalToken, "SIGNET_LOG_LEVEL": "error",
            // Nothing listens there: nothing is ever sent.
            "SIGNET_KAFKA_BROKERS": "127.0.0.1:9",
            "SIGNET_EPHEMERAL_SIGNING_KEY": "1",
            // The broker is absent by design: no connection errors in the test output.
            "SIGNET_KAFKA_PROPERTIES": "log_level=0",
        ]
        if let database { values["SIGNET_DATABASE_URL"] = TestStack.conninfo(database: database) }
        values.merge(environment) { _, new in new }
        let env = Environment(values)
        let logger = TestStack.quietLogger
        let configuration = try ServiceConfiguration(service: S.name, environment: env)
        let pool = PostgresPool(configuration: configuration.postgres, logger: logger)
        if database != nil {
            try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations + S.migrations, logger: logger)
        }
        let producer = try KafkaProducer(configuration: configuration.kafka, logger: logger)
        let relay = OutboxRelay(pool: pool, producer: producer, logger: logger, service: S.name.rawValue)
        let tenants = TenantDirectory(pool: pool)
        let context = ServiceContext(configuration: configuration, pool: pool, relay: relay, tenants: tenants, logger: logger)
        let assembly = try S.assemble(try await S.configuration(env, logger: logger), context: context)
        let (router, application) = ServiceRuntime.application(context: context, producer: producer, assembly: assembly, draining: AtomicFlag(false))
        return ServiceHarness(
            context: context, assembly: assembly, router: router, client: HTTPTestClient(application), database: database, dropDatabase: drop)
    }

    /// Closes the pool and drops the scratch database.
    public func close() async {
        context.pool.close()
        await dropDatabase?()
    }

    /// Sends a request through the service's router.
    public func send(
        _ method: String, _ path: String, bearer: String? = nil, headers: [(name: String, value: String)] = [], json: String? = nil
    ) async -> HTTPResponse {
        var all = headers
        if let bearer { all.append(("Authorization", "Bearer \(bearer)")) }
        if let json { return await client.execute(method, path, headers: all, json: json) }
        return await client.execute(method, path, headers: all)
    }

    /// Events the service has published (outbox rows, oldest first): their types and payloads.
    public func published() async throws -> [(type: String, data: String)] {
        try await context.pool.withConnection { conn in
            try await conn.query("SELECT event_type, data FROM outbox ORDER BY id")
        }.map { ($0.string("event_type") ?? "", $0.string("data") ?? "") }
    }

    /// The events of type `P` the service has published, oldest first, decoded.
    public func published<P: EventPayload>(_: P.Type) async throws -> [P] {
        try await published().filter { $0.type == P.eventType }.map { try EventCoding.decode(P.self, from: Array($0.data.utf8)) }
    }

    /// Gives `payload` to the service's consumer handlers, in one transaction, as the consumer
    /// would.
    public func consume<P: EventPayload>(_ payload: P, source: ServiceName) async throws {
        let envelope = try EventEnvelope(payload, source: source.eventSource, subject: nil)
        try await context.pool.withTransaction { conn in
            try await assembly.handlers.apply(envelope, on: conn)
        }
    }
}

/// Checks of a service's authorization matrix.
public enum AuthorizationMatrix {
    public struct Mismatch: Error, CustomStringConvertible {
        public let description: String
    }

    /// The registered routes are exactly the table's, each with its guard, none twice.
    public static func check(_ registered: [RegisteredRoute], against table: [(method: String, template: String, guard: String)]) throws {
        let expected = Set(table.map { RegisteredRoute(method: $0.method, template: $0.template, guardName: $0.guard) })
        let actual = Set(registered)
        var problems: [String] = []
        if actual.count != registered.count { problems.append("a route is registered twice") }
        for r in actual.subtracting(expected).sorted(by: { $0.description < $1.description }) { problems.append("not in the matrix: \(r)") }
        for r in expected.subtracting(actual).sorted(by: { $0.description < $1.description }) { problems.append("in the matrix, not registered: \(r)") }
        if !problems.isEmpty { throw Mismatch(description: problems.joined(separator: "\n")) }
    }

    /// A request without credentials to each non-public route is refused (401) before any
    /// handler runs. Path parameters are filled with plausible values.
    public static func checkAnonymousRefused<S: SignetService>(_ harness: ServiceHarness<S>) async throws {
        var problems: [String] = []
        for route in harness.router.registered where route.guardName != RouteGuard.open.name {
            let path = route.template.split(separator: "/").map { segment -> String in
                guard segment.hasPrefix("{") else { return String(segment) }
                return segment == "{username}" ? "alice" : segment == "{tenant}" ? "acme" : "x1"
            }.joined(separator: "/")
            let response = await harness.send(route.method, "/" + path, json: "{}")
            if response.status != 401 { problems.append("\(route): \(response.status) without credentials") }
        }
        if !problems.isEmpty { throw Mismatch(description: problems.joined(separator: "\n")) }
    }
}

extension ServiceHarness {
    /// Gives the service tenant `id` and an RP API key for it, by the events registration
    /// publishes (every service but registration keeps them as its read model).
    public func seedTenant(_ id: String, apiKey: String, rpId: String = "localhost", origins: [String] = ["http://localhost:8080"]) async throws {
        let now = Date()
        try await consume(TenantUpserted(tenantId: id, displayName: "Harness", rpId: rpId, origins: origins, revision: 1, updatedAt: now), source: .registration)
        try await consume(
            TenantAPIKeyCreated(tenantId: id, keyId: "k_0000000000000001", keyHash: Hex.encode(SHA256.hash(Array(apiKey.utf8))), createdAt: now),
            source: .registration)
    }
}
