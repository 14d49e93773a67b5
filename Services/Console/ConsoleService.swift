import Crypto
import Foundation
import HTTPServer
import Kafka
import Platform
import Schema
import ServiceKit

/// The admin console's backend (`signet-console`): serves the console page under `/console/`,
/// signs operators in with passkeys of the operators' tenant, keeps their sessions, and
/// forwards what each operator's role allows to the services' public admin and RP APIs. The
/// admin token and the operators' tenant's API key stay in this process; the browser holds a
/// session cookie only.
///
/// It is not one of the five services: no database, no events of its own. It follows their
/// shape (configuration from the environment, `_FILE` secrets, refusing development secrets
/// off loopback, `/healthz` `/readyz` `/metrics`, graceful shutdown).
public enum ConsoleService {
    public struct Configuration: Sendable {
        public var http: HTTPServerConfiguration
        public var adminToken: String
        /// The RP API key of the operators' tenant (`SIGNET_CONSOLE_RP_API_KEY`).
        public var operatorsKey: String
        /// The operators' tenant (`SIGNET_CONSOLE_TENANT`).
        public var operatorsTenant: String
        /// Where operators open the console (`SIGNET_CONSOLE_ORIGIN`): the tenant's origin, the
        /// only `Origin` accepted, and https makes the cookie `Secure`.
        public var origin: String
        /// The operators' tenant's RP ID (`SIGNET_CONSOLE_RP_ID`, by default the origin's host).
        public var rpID: String
        public var operators: OperatorDirectory
        /// `SIGNET_CONSOLE_ENROLMENT_CODE`; absent, nobody can enrol a passkey.
        public var enrolmentCode: String?
        public var idleTimeout: Duration
        public var lifetime: Duration
        public var serviceURLs: [ServiceName: String]
        public var assets: ConsoleAssets
        public var shutdownGrace: Duration
        /// Where the live feed's events come from (`SIGNET_KAFKA_BROKERS`, `SIGNET_KAFKA_PROPERTIES`).
        public var kafka: KafkaConfiguration
        /// The topics the console may show (`SIGNET_CONSOLE_EVENT_TOPICS`).
        public var eventTopics: [String]
        /// How long a feed request waits for a new event (`SIGNET_CONSOLE_EVENT_WAIT_MS`).
        public var eventWait: Duration
        public var instanceID: String
    }

    /// The local stack's operators' tenant key; refused off loopback.
    public static let developmentOperatorsKey = "dev-console-rp-key"
    public static let defaultPort = 8086

    /// Reads the configuration.
    ///
    /// - Throws: `Environment.ConfigurationError` naming the variable (never its value).
    public static func configuration(_ env: Environment) throws -> Configuration {
        try env.checkFiles()
        let http = try ServiceConfiguration.http(env, defaultPort: defaultPort)
        let adminToken = env.string("SIGNET_ADMIN_TOKEN", default: ServiceConfiguration.developmentAdminToken)
        let operatorsKey = env.string("SIGNET_CONSOLE_RP_API_KEY", default: developmentOperatorsKey)
        let enrolmentCode = env.optionalString("SIGNET_CONSOLE_ENROLMENT_CODE")
        if !ServiceConfiguration.isLoopback(http.host) {
            var missing: [String] = []
            if adminToken == ServiceConfiguration.developmentAdminToken || adminToken.utf8.count < ServiceConfiguration.minimumTokenLength {
                missing.append("SIGNET_ADMIN_TOKEN")
            }
            if operatorsKey == developmentOperatorsKey || operatorsKey.utf8.count < ServiceConfiguration.minimumTokenLength {
                missing.append("SIGNET_CONSOLE_RP_API_KEY")
            }
            if let enrolmentCode, enrolmentCode.utf8.count < ServiceConfiguration.minimumTokenLength { missing.append("SIGNET_CONSOLE_ENROLMENT_CODE") }
            guard missing.isEmpty else {
                throw Environment.ConfigurationError(
                    variable: missing.joined(separator: ", "),
                    reason: "the console listening on \(http.host) (off loopback) refuses development defaults: set each (or <name>_FILE), "
                        + "at least \(ServiceConfiguration.minimumTokenLength) characters")
            }
        }
        let tenant = env.string("SIGNET_CONSOLE_TENANT", default: "operators")
        guard TenantValidation.isValidTenantID(tenant) else {
            throw Environment.ConfigurationError(variable: "SIGNET_CONSOLE_TENANT", reason: "not a tenant id")
        }
        let origin = env.string("SIGNET_CONSOLE_ORIGIN", default: "http://localhost:8080")
        guard TenantValidation.isValidOrigin(origin), let host = URL(string: origin)?.host else {
            throw Environment.ConfigurationError(variable: "SIGNET_CONSOLE_ORIGIN", reason: "expected https://host[:port] (http only for localhost)")
        }
        let rpID = env.string("SIGNET_CONSOLE_RP_ID", default: host)
        guard TenantValidation.isValidRPID(rpID) else { throw Environment.ConfigurationError(variable: "SIGNET_CONSOLE_RP_ID", reason: "not a domain name") }
        guard let operators = OperatorDirectory.parse(env.string("SIGNET_CONSOLE_OPERATORS", default: ""), isValidUsername: UsernameRules.isValid)
        else {
            throw Environment.ConfigurationError(
                variable: "SIGNET_CONSOLE_OPERATORS", reason: "expected name=role,name=role with roles viewer, operator or administrator")
        }
        var urls: [ServiceName: String] = [:]
        for (service, variable) in [
            (ServiceName.registration, "SIGNET_REGISTRATION_URL"), (.authentication, "SIGNET_AUTHENTICATION_URL"), (.transaction, "SIGNET_TRANSACTION_URL"),
            (.oob, "SIGNET_OOB_URL"), (.pii, "SIGNET_PII_URL"),
        ] {
            urls[service] = env.string(variable, default: "http://127.0.0.1:\(service.defaultPort)")
        }
        return Configuration(
            http: http, adminToken: adminToken, operatorsKey: operatorsKey, operatorsTenant: tenant, origin: origin, rpID: rpID, operators: operators,
            enrolmentCode: enrolmentCode,
            idleTimeout: .seconds(try env.int("SIGNET_CONSOLE_SESSION_IDLE_SECONDS", default: 900, range: 60...86_400)),
            lifetime: .seconds(try env.int("SIGNET_CONSOLE_SESSION_MAX_SECONDS", default: 28_800, range: 300...604_800)),
            serviceURLs: urls, assets: try ConsoleAssets.load(from: env.string("SIGNET_CONSOLE_ASSETS_DIR", default: "Services/Console/Assets")),
            shutdownGrace: .seconds(try env.int("SIGNET_SHUTDOWN_GRACE_SECONDS", default: 25, range: 1...3600)),
            kafka: KafkaConfiguration(
                brokers: env.string("SIGNET_KAFKA_BROKERS", default: "127.0.0.1:19092"), clientID: "signet-console",
                properties: try ServiceConfiguration.kafkaProperties(env)),
            eventTopics: try eventTopics(env),
            eventWait: .milliseconds(try env.int("SIGNET_CONSOLE_EVENT_WAIT_MS", default: 8000, range: 100...9000)),
            instanceID: env.string("SIGNET_INSTANCE_ID", default: ProcessInfo.processInfo.hostName + "-\(getpid())"))
    }

    /// Sign-ins, failures, lockouts and sessions (authentication), credentials' changes, clone
    /// suspicions and metadata revocations (registration), and sign-in policy changes, by default.
    static func eventTopics(_ env: Environment) throws -> [String] {
        let topics = env.string(
            "SIGNET_CONSOLE_EVENT_TOPICS", default: "\(Topic.authentication),\(Topic.registration),\(Topic.authenticationPolicy)")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !topics.isEmpty, topics.allSatisfy({ Topic.all.contains($0) }) else {
            throw Environment.ConfigurationError(variable: "SIGNET_CONSOLE_EVENT_TOPICS", reason: "expected Signet topics, comma-separated")
        }
        return topics
    }

    /// The console's routes over `upstream`, as production serves them and the in-process
    /// tests call them.
    public static func application(
        _ configuration: Configuration, upstream: any ConsoleUpstream, readiness: ConsoleReadiness, events: ConsoleEventBuffer, logger: Logger
    ) -> ConsoleApplication {
        let sessions = OperatorSessions(idleTimeout: configuration.idleTimeout, lifetime: configuration.lifetime)
        let guards = ConsoleGuards(
            sessions: sessions,
            cookie: SessionCookie(secure: configuration.origin.hasPrefix("https://"), maxAge: Int(configuration.lifetime.components.seconds)),
            operatorsTenant: configuration.operatorsTenant, origin: configuration.origin)
        var router = GuardedRouter(maxBodyBytes: configuration.http.maxBodyBytes)
        router.get("/healthz", .open) { _, _ in try .json(HealthStatus(status: "ok", checks: nil, version: BuildInfo.version)) }
        router.get("/readyz", .open) { _, _ in
            let ready = readiness.isReady
            return try .json(
                HealthStatus(status: ready ? "ok" : "unavailable", checks: ["operatorsTenant": ready ? "ok" : "pending"], version: BuildInfo.version),
                status: ready ? 200 : 503)
        }
        router.get("/metrics", .open) { _, _ in .text(MetricsRegistry.shared.render(), contentType: "text/plain; version=0.0.4; charset=utf-8") }
        configuration.assets.register(on: &router)
        OperatorSignInRoutes(upstream: upstream, guards: guards, operators: configuration.operators, enrolmentCode: configuration.enrolmentCode)
            .register(on: &router)
        TenantConsoleRoutes(upstream: upstream, guards: guards).register(on: &router)
        RulesetConsoleRoutes(upstream: upstream, guards: guards).register(on: &router)
        let keys = ConsoleTenantKeys(upstream: upstream, secret: configuration.operatorsKey)
        UserConsoleRoutes(upstream: upstream, guards: guards, keys: keys).register(on: &router)
        UserDirectoryConsoleRoutes(upstream: upstream, guards: guards, keys: keys).register(on: &router)
        EventFeedRoutes(buffer: events, guards: guards, wait: configuration.eventWait).register(on: &router)
        ServiceStatusRoutes(upstream: upstream, guards: guards).register(on: &router)
        PolicyConsoleRoutes(upstream: upstream, guards: guards).register(on: &router)
        TenantSettingsConsoleRoutes(upstream: upstream, guards: guards).register(on: &router)
        TemplateConsoleRoutes(upstream: upstream, guards: guards).register(on: &router)
        return ConsoleApplication(
            router: router, sessions: sessions,
            application: HTTPApplication(router: router.router, logger: logger, parameterChecks: HTTPApplication.signetParameterChecks))
    }

    /// Runs the console until SIGTERM/SIGINT; exits 78 on a configuration error.
    public static func main() async {
        var logger = Logger(label: "signet.console")
        logger[metadataKey: LogKey.service] = "console"
        let configuration: Configuration
        do {
            configuration = try Self.configuration(Environment())
        } catch {
            logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
            exit(78)  // EX_CONFIG
        }
        let upstream = HTTPUpstream(baseURLs: configuration.serviceURLs, adminToken: configuration.adminToken, operatorsKey: configuration.operatorsKey)
        let readiness = ConsoleReadiness()
        let events = ConsoleEventBuffer()
        let app = application(configuration, upstream: upstream, readiness: readiness, events: events, logger: logger)
        let http = HTTPServer(configuration: configuration.http, logger: logger) { await app.respond(to: $0) }
        do {
            SignalTrap.install()
            try http.start()
            let provisioner = OperatorsTenantProvisioner(configuration: configuration, upstream: upstream, readiness: readiness, logger: logger)
            let operatorsTenant = OperatorsTenantEvents(tenant: configuration.operatorsTenant, sessions: app.sessions, logger: logger) {
                provisioner.recheck()
            }
            let listener = try ConsoleEventListener(
                configuration: configuration.kafka, feedTopics: configuration.eventTopics, instance: configuration.instanceID, buffer: events,
                operatorsTenant: operatorsTenant, logger: logger)
            let group = ServiceGroup(services: [listener, provisioner, http], logger: logger, maximumShutdownDuration: configuration.shutdownGrace)
            MemoryAllocator.publish()
            logger.notice(
                "console started",
                metadata: ["signet.console.tenant": .string(configuration.operatorsTenant), "signet.allocator": .string(MemoryAllocator.current)])
            try await group.run()
            exit(0)
        } catch {
            logger.critical("console stopped on error", metadata: [LogKey.error: "\(error)"])
            exit(1)
        }
    }
}

/// The console's responder: its routes, and the security headers on every response.
public struct ConsoleApplication: Sendable {
    /// The registered routes with their guards (the authorization matrix test reads them).
    public let router: GuardedRouter
    /// The operators' sessions (``OperatorsTenantEvents`` ends those whose passkey goes).
    public let sessions: OperatorSessions
    let application: HTTPApplication

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        var request = request
        // The router's templates have no trailing slash; the page's address has one.
        if request.path == "/console/" { request.path = "/console/index.html" }
        var response = await application.respond(to: request)
        response.headers += ConsoleAssets.securityHeaders
        return response
    }
}
