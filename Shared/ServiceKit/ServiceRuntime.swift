import Foundation
import HTTPServer
import Kafka
import Platform
import Postgres
import Schema

/// What a service's routes and handlers get to work with.
public struct ServiceContext: Sendable {
    public let configuration: ServiceConfiguration
    public let pool: PostgresPool
    public let relay: OutboxRelay
    public let tenants: TenantDirectory
    public let logger: Logger

    /// Runs `body` in a transaction and wakes the outbox relay after it commits.
    @discardableResult
    public func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let value = try await pool.withTransaction(body)
        relay.notify()
        return value
    }
}

/// A service's own long-running parts, made once its context exists.
public struct BackgroundServices: Sendable {
    let make: @Sendable (ServiceContext) -> [any Service]

    /// No background services.
    public init() { make = { _ in [] } }

    public init(_ make: @escaping @Sendable (ServiceContext) -> [any Service]) { self.make = make }
}

/// Wires a service: configuration, database and migrations, Kafka producer, outbox relay,
/// consumer, HTTP, and graceful shutdown in reverse order.
public enum ServiceRuntime {
    /// Runs the service until SIGTERM/SIGINT; exits the process on failure.
    ///
    /// - Parameters:
    ///   - migrations: the service's own migrations, versions above 100 (1–99 are common).
    ///   - handlers: event handlers beyond the tenant read model (which every service but
    ///     registration keeps).
    ///   - background: the service's own long-running parts (schedulers, refreshers), started
    ///     after the consumer and stopped before it.
    ///   - routes: adds the service's own routes.
    public static func main(
        service: ServiceName, migrations: [Migration] = [], handlers: EventHandlers = EventHandlers(),
        background: BackgroundServices = BackgroundServices(),
        routes: @Sendable (inout Router, ServiceContext) -> Void = { _, _ in }
    ) async {
        var logger = Logger(label: "signet.\(service.rawValue)")
        logger[metadataKey: LogKey.service] = .string(service.rawValue)
        let configuration: ServiceConfiguration
        do {
            configuration = try ServiceConfiguration(service: service)
        } catch {
            logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
            exit(78)  // EX_CONFIG
        }
        do {
            try await run(
                configuration: configuration, migrations: migrations, handlers: handlers, background: background, routes: routes, logger: logger)
            exit(0)
        } catch {
            logger.critical("service stopped on error", metadata: [LogKey.error: "\(error)"])
            exit(1)
        }
    }

    static func run(
        configuration: ServiceConfiguration, migrations: [Migration], handlers extraHandlers: EventHandlers,
        background: BackgroundServices = BackgroundServices(),
        routes: @Sendable (inout Router, ServiceContext) -> Void, logger: Logger
    ) async throws {
        let service = configuration.service
        if configuration.adminToken == ServiceConfiguration.developmentAdminToken && configuration.http.host != "127.0.0.1"
            && service == .registration
        {
            logger.warning("the development admin token is in use on a non-loopback address; set SIGNET_ADMIN_TOKEN")
        }
        let pool = PostgresPool(configuration: configuration.postgres, logger: logger)
        try await waitForDatabase(pool, timeout: configuration.startupTimeout, logger: logger)
        try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations + migrations, logger: logger)

        let producer = try KafkaProducer(configuration: configuration.kafka, logger: logger)
        let relay = OutboxRelay(pool: pool, producer: producer, logger: logger, service: service.rawValue)
        let tenants = TenantDirectory(pool: pool)
        let context = ServiceContext(configuration: configuration, pool: pool, relay: relay, tenants: tenants, logger: logger)

        var handlers = service == .registration ? EventHandlers() : TenantDirectory.readModelHandlers
        handlers.merge(extraHandlers)

        var services: [any Service] = [relay]
        if !service.consumedTopics.isEmpty {
            services.append(
                try EventConsumerService(
                    service: service, kafka: configuration.kafka, producer: producer, pool: pool, handlers: handlers, logger: logger,
                    groupID: configuration.consumerGroup))
        }
        services += background.make(context)
        let draining = AtomicFlag(false)
        var router = Router()
        HealthRoutes(pool: pool, producer: producer, draining: draining, unassignedBound: configuration.kafkaUnassignedReadyBound)
            .register(on: &router)
        router.get("/v1/tenants/{tenant}", tenants.routeGetTenant())
        routes(&router, context)
        let app = HTTPApplication(router: router, logger: logger)
        let http = HTTPServer(configuration: configuration.http, logger: logger) { await app.respond(to: $0) }
        try http.start()
        services.append(DrainFlagService(flag: draining))
        services.append(http)

        let group = ServiceGroup(services: services, logger: logger, maximumShutdownDuration: configuration.shutdownGrace)
        logger.notice("service started", metadata: ["signet.instance": .string(configuration.instanceID)])
        try await group.run()
        await producer.flush(timeoutMs: 5000)
        pool.close()
    }

    private static func waitForDatabase(_ pool: PostgresPool, timeout: Duration, logger: Logger) async throws {
        let deadline = ContinuousClock.now + timeout
        var delay = Duration.milliseconds(200)
        while true {
            do {
                try await pool.ping()
                return
            } catch {
                if ContinuousClock.now + delay > deadline { throw error }
                logger.warning("database not reachable yet; retrying", metadata: [LogKey.error: "\(error)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(3))
            }
        }
    }
}

/// Marks the process as draining as soon as shutdown starts (it is shut down first, being
/// last in the list), so `/readyz` turns 503 while in-flight requests finish.
struct DrainFlagService: Service {
    let name = "readiness"
    let flag: AtomicFlag
    private let done = AsyncSignal()

    init(flag: AtomicFlag) { self.flag = flag }

    func run() async throws { await done.wait() }
    func shutdown() async {
        flag.set(true)
        done.signal()
    }
}
