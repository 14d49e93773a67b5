import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
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

    public init(configuration: ServiceConfiguration, pool: PostgresPool, relay: OutboxRelay, tenants: TenantDirectory, logger: Logger) {
        self.configuration = configuration
        self.pool = pool
        self.relay = relay
        self.tenants = tenants
        self.logger = logger
    }

    /// Runs `body` in a transaction and wakes the outbox relay after it commits.
    @discardableResult
    public func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let value = try await pool.withTransaction(body)
        relay.notify()
        return value
    }
}

/// Wires a service: configuration, database and migrations, Kafka producer, outbox relay,
/// consumer, HTTP, and graceful shutdown in reverse order.
public enum ServiceRuntime {
    /// Runs `S` until SIGTERM/SIGINT; exits the process on failure (78, `EX_CONFIG`, for a
    /// configuration error).
    public static func main<S: SignetService>(_: S.Type) async {
        var logger = Logger(label: "signet.\(S.name.rawValue)")
        logger[metadataKey: LogKey.service] = .string(S.name.rawValue)
        let configuration: ServiceConfiguration
        let own: S.Configuration
        do {
            let env = Environment()
            configuration = try ServiceConfiguration(service: S.name, environment: env)
            own = try await S.configuration(env, logger: logger)
        } catch {
            logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
            exit(78)  // EX_CONFIG
        }
        do {
            try await run(S.self, own, configuration: configuration, logger: logger)
            exit(0)
        } catch {
            logger.critical("service stopped on error", metadata: [LogKey.error: "\(error)"])
            exit(1)
        }
    }

    static func run<S: SignetService>(_: S.Type, _ own: S.Configuration, configuration: ServiceConfiguration, logger: Logger) async throws {
        let pool = PostgresPool(configuration: configuration.postgres, logger: logger)
        try await waitForDatabase(pool, timeout: configuration.startupTimeout, logger: logger)
        try await Migrator.migrate(pool: pool, migrations: Outbox.commonMigrations + S.migrations, logger: logger)

        let producer = try KafkaProducer(configuration: configuration.kafka, logger: logger)
        let relay = OutboxRelay(
            pool: pool, producer: producer, logger: logger, service: S.name.rawValue, linger: configuration.outboxLinger)
        let tenants = TenantDirectory(pool: pool)
        let context = ServiceContext(configuration: configuration, pool: pool, relay: relay, tenants: tenants, logger: logger)
        let assembly = try S.assemble(own, context: context)

        var services: [any Service] = [relay]
        _ = Tracer.shared  // its counters are in /metrics from start-up (at 0 while export is off)
        // First, so it stops last: spans of the requests and events that finish while the
        // others drain are still sent.
        if let otlp = configuration.otlp {
            services.insert(
                OTLPExporter(configuration: otlp, service: "signet-\(S.name.rawValue)", instance: configuration.instanceID, logger: logger), at: 0)
            logger.info("exporting spans over OTLP/HTTP", metadata: ["signet.otlp.endpoint": .string(otlp.endpoint.absoluteString)])
        }
        if !assembly.handlers.isEmpty {
            services.append(
                try EventConsumerService(
                    service: S.name, kafka: configuration.kafka, producer: producer, pool: pool, handlers: assembly.handlers, logger: logger,
                    groupID: configuration.consumerGroup, topics: assembly.handlers.topics))
        }
        services += assembly.background
        let draining = AtomicFlag(false)
        let (router, app) = application(context: context, producer: producer, assembly: assembly, draining: draining)
        // Past SIGNET_HTTP_MAX_BODY_BYTES the server asks the router for the route's own bound
        // (GuardedRouter extraBodyBytes): every other route is refused at the default.
        var httpConfiguration = configuration.http
        httpConfiguration.routeBodyLimit = { [router] method, path in router.bodyLimit(method: method, path: path) }
        let http = HTTPServer(configuration: httpConfiguration, logger: logger, immediate: { app.respondImmediately(to: $0) }) { await app.respond(to: $0) }
        // SIGTERM from here on starts a graceful shutdown once the group runs (before: the
        // default, the process ends; nothing to drain yet).
        SignalTrap.install()
        try http.start()
        services.append(DrainFlagService(flag: draining))
        services.append(http)

        let group = ServiceGroup(services: services, logger: logger, maximumShutdownDuration: configuration.shutdownGrace)
        MemoryAllocator.publish()
        logger.notice("service started", metadata: ["signet.instance": .string(configuration.instanceID), "signet.allocator": .string(MemoryAllocator.current)])
        try await group.run()
        await producer.flush(timeoutMs: 5000)
        pool.close()
    }

    /// The service's HTTP application, as production and the in-process tests serve it: the
    /// probes, the tenants' public description every service has, the assembly's routes, and
    /// the parameter checks of every Signet service. Also returns the router, whose registered
    /// routes the authorization matrix tests read.
    public static func application(
        context: ServiceContext, producer: KafkaProducer, assembly: ServiceAssembly, draining: AtomicFlag
    ) -> (GuardedRouter, HTTPApplication) {
        var router = GuardedRouter(maxBodyBytes: context.configuration.http.maxBodyBytes)
        HealthRoutes(pool: context.pool, producer: producer, draining: draining, unassignedBound: context.configuration.kafkaUnassignedReadyBound)
            .register(on: &router)
        router.get("/v1/tenants/{tenant}", .open, context.tenants.routeGetTenant())
        assembly.routes(&router)
        return (router, HTTPApplication(router: router.router, logger: context.logger, parameterChecks: HTTPApplication.signetParameterChecks))
    }

    private static func waitForDatabase(_ pool: PostgresPool, timeout: Duration, logger: Logger) async throws {
        let deadline = ContinuousClock.now + timeout
        var backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(3))
        while true {
            do {
                try await pool.ping()
                return
            } catch {
                let delay = backoff.next()
                if ContinuousClock.now + delay > deadline { throw error }
                logger.warning("database not reachable yet; retrying", metadata: [LogKey.error: "\(error)"])
                try await Task.sleep(for: delay)
            }
        }
    }
}

/// Marks the process as draining as soon as shutdown starts (it is shut down first, being
/// last in the list), so `/readyz` turns 503 while in-flight requests finish.
struct DrainFlagService: Service {
    let name = "readiness"
    let flag: AtomicFlag
    private let done = Wakeups()

    init(flag: AtomicFlag) { self.flag = flag }

    func run() async throws {
        var waiter = done.makeWaiter()
        await waiter.wait()
    }
    func shutdown() async {
        flag.set(true)
        done.finish()
    }
}
