import Crypto
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Kafka
import Platform
import Postgres
import Schema

/// A service's configuration, read from the environment. Every variable has a default that
/// suits the local stack; the README lists them all.
public struct ServiceConfiguration: Sendable {
    public var service: ServiceName
    public var http: HTTPServerConfiguration
    public var postgres: PostgresConfiguration
    public var kafka: KafkaConfiguration
    /// The Kafka consumer group (default `signet-<service>`). Replicas of a service share it;
    /// a process working on a database of its own (a test replica on a scratch database)
    /// needs another, or it would take events away from the real replicas.
    public var consumerGroup: String
    /// Admin API bearer token.
    public var adminToken: String
    /// The token this service presents to the others on `/v1/internal/…` routes.
    public var internalToken: String
    /// The SHA-256 of each service's internal token (`SIGNET_INTERNAL_CALLERS`), by name: a
    /// caller is admitted only with its own token. nil: one token shared by every service.
    public var internalCallers: [String: [UInt8]]?
    /// This service's internal calls: the token it presents, and the callers it admits.
    public var internalCalls: InternalCalls { InternalCalls(token: internalToken, service: service.rawValue, callers: internalCallers) }
    /// The deployment's subject key (`SIGNET_SUBJECT_KEY`, base64url, at least 32 bytes): events
    /// name users by ``SubjectKey/ref(tenant:username:)``, never by username. Every service
    /// shares it, as the internal token; on loopback it defaults to a public development key.
    public var subjectKey: SubjectKey
    /// The registration service's base URL (`SIGNET_REGISTRATION_URL`): the other services ask
    /// it for the username of an erasure in progress.
    public var registrationURL: String
    public var shutdownGrace: Duration
    /// How long start-up waits for PostgreSQL to accept connections.
    public var startupTimeout: Duration
    public var instanceID: String
    /// How long a Kafka consumer of this process may be out of its group before `/readyz` says
    /// 503 (`SIGNET_KAFKA_UNASSIGNED_READY_SECONDS`; 0 turns the check off).
    public var kafkaUnassignedReadyBound: Duration
    /// How long at most the outbox relay lets rows gather after a turn that found only a few,
    /// while events keep coming (`SIGNET_OUTBOX_LINGER_MS`, default 20): each turn's fixed cost
    /// (a transaction of four statements, a broker round trip, thread wake-ups) is shared by
    /// the events it sends, for at most this much more delay of an event under a steady
    /// stream. The pause ends earlier once an eighth of a batch (32 commits) has been notified;
    /// an event after a quiet spell is sent at once.
    public var outboxLinger: Duration
    /// Span export over OTLP/HTTP (`SIGNET_OTLP_ENDPOINT`); nil: off (the default). Trace
    /// contexts are propagated and logged either way.
    public var otlp: OTLPConfiguration?
    /// How often the ``KeyResealer`` passes over the sealed columns while a key has an
    /// `_ACCEPTED` list (`SIGNET_RESEAL_INTERVAL_SECONDS`, 60 s…1 day, default an hour), and how
    /// long after start-up its first pass comes (`SIGNET_RESEAL_FIRST_DELAY_SECONDS`, 0…1 hour,
    /// default 10 s).
    public var resealInterval: Duration
    public var resealFirstDelay: Duration

    /// The local stack's admin token; a service listening off loopback refuses to start with it.
    public static let developmentAdminToken = "dev-admin-token"
    /// The shortest admin or internal token a service listening off loopback accepts.
    public static let minimumTokenLength = 32
    /// The local stack's subject key (public: it is in this repository); a service listening
    /// off loopback refuses to start with it.
    public static let developmentSubjectKey = "c2lnbmV0LWRldmVsb3BtZW50LXN1YmplY3Qta2V5LW5vdC1zZWNyZXQ"

    public init(service: ServiceName, environment env: Environment = Environment()) throws {
        self.service = service
        let host = env.string("SIGNET_HTTP_HOST", default: "127.0.0.1")
        http = try Self.http(env, defaultPort: service.defaultPort, defaultMaxBodyBytes: Self.defaultMaxBodyBytes)
        let pgHost = env.string("SIGNET_PG_HOST", default: "127.0.0.1")
        let pgPort = try env.int("SIGNET_PG_PORT", default: 54329, range: 1...65535)
        let pgUser = env.string("SIGNET_PG_USER", default: "signet")
        let defaultURL = "postgresql://\(pgUser)@\(pgHost):\(pgPort)/signet_\(service.rawValue)?connect_timeout=5&application_name=signet-\(service.rawValue)"
        postgres = PostgresConfiguration(
            conninfo: env.string("SIGNET_DATABASE_URL", default: defaultURL),
            poolSize: try env.int("SIGNET_DB_POOL_SIZE", default: 8, range: 1...200))
        let props = try Self.kafkaProperties(env)
        instanceID = env.string("SIGNET_INSTANCE_ID", default: ProcessInfo.processInfo.hostName + "-\(getpid())")
        kafka = KafkaConfiguration(
            brokers: env.string("SIGNET_KAFKA_BROKERS", default: "127.0.0.1:19092"),
            clientID: "signet-\(service.rawValue)", properties: props)
        consumerGroup = env.string("SIGNET_KAFKA_CONSUMER_GROUP", default: service.consumerGroup)
        adminToken = env.string("SIGNET_ADMIN_TOKEN", default: ServiceConfiguration.developmentAdminToken)
        internalToken = env.string("SIGNET_INTERNAL_TOKEN", default: InternalCalls.developmentToken)
        try env.checkFiles()
        internalCallers = try InternalCalls.callers(env, service: service.rawValue, token: internalToken)
        let subjectKeyText = env.string("SIGNET_SUBJECT_KEY", default: Self.developmentSubjectKey)
        guard let subjectKeyBytes = Base64URL.decode(subjectKeyText), let subjectKey = try? SubjectKey(subjectKeyBytes) else {
            throw Environment.ConfigurationError(variable: "SIGNET_SUBJECT_KEY", reason: "expected at least \(SubjectKey.minimumByteCount) bytes, base64url")
        }
        self.subjectKey = subjectKey
        registrationURL = env.string("SIGNET_REGISTRATION_URL", default: "http://127.0.0.1:\(ServiceName.registration.defaultPort)")
        // Fail closed: the development tokens are public (they are in this repository), and a
        // random key per process breaks replicas and restarts, so a service reachable from
        // other hosts refuses to start without every secret it needs, naming each one.
        if !Self.isLoopback(host) {
            var missing: [String] = []
            for (variable, value, development) in [
                ("SIGNET_ADMIN_TOKEN", adminToken, Self.developmentAdminToken), ("SIGNET_INTERNAL_TOKEN", internalToken, InternalCalls.developmentToken),
            ] where value == development || value.utf8.count < Self.minimumTokenLength {
                missing.append(variable)
            }
            if env.optionalString("SIGNET_SUBJECT_KEY") == Self.developmentSubjectKey { missing.append("SIGNET_SUBJECT_KEY") }
            for variable in Self.requiredSecrets(service) where env.optionalString(variable) == nil {
                missing.append(variable)
            }
            guard missing.isEmpty else {
                throw Environment.ConfigurationError(
                    variable: missing.joined(separator: ", "),
                    reason: "a service listening on \(host) (off loopback) refuses development defaults and random per-process keys: set each "
                        + "(or <name>_FILE); tokens at least \(Self.minimumTokenLength) characters, keys 32 bytes base64url (SIGNET_SUBJECT_KEY at least 32), SIGNET_SIGNING_KEY_FILE a PEM file")
            }
        }
        shutdownGrace = .seconds(try env.int("SIGNET_SHUTDOWN_GRACE_SECONDS", default: 25, range: 1...3600))
        startupTimeout = .seconds(try env.int("SIGNET_STARTUP_TIMEOUT_SECONDS", default: 60, range: 1...3600))
        kafkaUnassignedReadyBound = .seconds(try env.int("SIGNET_KAFKA_UNASSIGNED_READY_SECONDS", default: 30, range: 0...86_400))
        outboxLinger = .milliseconds(try env.int("SIGNET_OUTBOX_LINGER_MS", default: 20, range: 0...1000))
        otlp = try OTLPConfiguration.fromEnvironment(env)
        resealInterval = .seconds(try env.int("SIGNET_RESEAL_INTERVAL_SECONDS", default: 3600, range: 60...86_400))
        resealFirstDelay = .seconds(try env.int("SIGNET_RESEAL_FIRST_DELAY_SECONDS", default: 10, range: 0...3600))
    }

    /// The keys `service` needs besides the admin and internal tokens. On loopback each falls
    /// back to a random key per process (with a warning; the subject key to the public
    /// development key, which every service shares); off loopback each must be set.
    public static func requiredSecrets(_ service: ServiceName) -> [String] {
        // SIGNET_SUBJECT_KEY turns usernames into the references events carry: every service.
        // SIGNET_INTERNAL_CALLERS: off loopback, a token per service (InternalCalls), never one
        // shared by all.
        switch service {
        case .registration: ["SIGNET_SUBJECT_KEY", "SIGNET_CEREMONY_KEY", "SIGNET_METHOD_SECRET_KEY", "SIGNET_DELIVERY_KEY", "SIGNET_OTP_HASH_KEY", "SIGNET_RECEIPT_SIGNING_KEY_FILE", "SIGNET_INTERNAL_CALLERS"]
        case .authentication: ["SIGNET_SUBJECT_KEY", "SIGNET_CEREMONY_KEY", "SIGNET_METHOD_SECRET_KEY", "SIGNET_DELIVERY_KEY", "SIGNET_OTP_HASH_KEY", "SIGNET_SIGNING_KEY_FILE", "SIGNET_INTERNAL_CALLERS"]
        case .transaction: ["SIGNET_SUBJECT_KEY", "SIGNET_TCTOKEN_KEY_SEAL", "SIGNET_INTERNAL_CALLERS"]
        case .oob: ["SIGNET_SUBJECT_KEY", "SIGNET_DELIVERY_KEY", "SIGNET_OOB_KEY_SEAL", "SIGNET_INTERNAL_CALLERS"]
        case .pii: ["SIGNET_SUBJECT_KEY", "SIGNET_PII_KEK", "SIGNET_INTERNAL_CALLERS"]
        }
    }

    /// The default request body limit (`SIGNET_HTTP_MAX_BODY_BYTES`): 64 KiB for every route of
    /// every service. Routes that carry more (a transaction's PNG images) declare the extra
    /// bytes where they are registered (`GuardedRouter.on(_:_:_:extraBodyBytes:_:)`), computed
    /// from the bounds of what they carry; the server refuses every other body past this one.
    public static let defaultMaxBodyBytes = 64 * 1024

    /// The HTTP listener's settings (`SIGNET_HTTP_*`), for a service and for the console,
    /// which shares them without being one of the five services.
    public static func http(_ env: Environment, defaultPort: Int, defaultMaxBodyBytes: Int = Self.defaultMaxBodyBytes) throws -> HTTPServerConfiguration {
        let host = env.string("SIGNET_HTTP_HOST", default: "127.0.0.1")
        let port = try env.int("SIGNET_HTTP_PORT", default: defaultPort, range: 0...65535)
        return HTTPServerConfiguration(
            host: host, port: port,
            threads: try env.int("SIGNET_HTTP_THREADS", default: max(2, ProcessInfo.processInfo.activeProcessorCount), range: 1...256),
            maxBodyBytes: try env.int("SIGNET_HTTP_MAX_BODY_BYTES", default: defaultMaxBodyBytes, range: 1024...(16 * 1024 * 1024)),
            maxConnections: try env.int("SIGNET_HTTP_MAX_CONNECTIONS", default: 1024, range: 1...100_000),
            idleTimeoutSeconds: try env.int("SIGNET_HTTP_IDLE_TIMEOUT_SECONDS", default: 30, range: 1...3600),
            requestTimeout: .milliseconds(try env.int("SIGNET_HTTP_REQUEST_TIMEOUT_MS", default: 10_000, range: 100...600_000)),
            maxConnectionsPerAddress: try env.int("SIGNET_HTTP_MAX_CONNECTIONS_PER_IP", default: 256, range: 1...100_000),
            unlimitedAddresses: try Self.addressRanges(env, "SIGNET_HTTP_UNLIMITED_ADDRESSES", default: "127.0.0.0/8,::1"),
            pressureIdleTimeoutSeconds: try env.int("SIGNET_HTTP_PRESSURE_IDLE_TIMEOUT_SECONDS", default: 2, range: 1...3600),
            healthPort: try env.optionalString("SIGNET_HTTP_HEALTH_PORT").map { _ in try env.int("SIGNET_HTTP_HEALTH_PORT", default: 0, range: 0...65535) },
            mode: try httpMode(env))
    }

    /// `SIGNET_HTTP_MODE`: `loop` (default) or `pool` (see ``HTTPServerMode``).
    static func httpMode(_ env: Environment) throws -> HTTPServerMode {
        let raw = env.string("SIGNET_HTTP_MODE", default: HTTPServerMode.loop.rawValue)
        guard let mode = HTTPServerMode(rawValue: raw) else {
            throw Environment.ConfigurationError(variable: "SIGNET_HTTP_MODE", reason: "expected pool or loop")
        }
        return mode
    }

    /// Extra librdkafka properties (`SIGNET_KAFKA_PROPERTIES`, `key=value;key=value`), for a
    /// service and for the console.
    public static func kafkaProperties(_ env: Environment) throws -> [String: String] {
        var props: [String: String] = [:]
        if let extra = env.optionalString("SIGNET_KAFKA_PROPERTIES") {
            for pair in extra.split(separator: ";") where !pair.trimmingWhitespace().isEmpty {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else {
                    throw Environment.ConfigurationError(variable: "SIGNET_KAFKA_PROPERTIES", reason: "expected key=value;key=value")
                }
                props[kv[0].trimmingWhitespace()] = kv[1].trimmingWhitespace()
            }
        }
        return props
    }

    /// Whether `host` is a loopback listening address (`127.0.0.0/8`, `::1`, `localhost`):
    /// nothing off this machine can reach it.
    public static func isLoopback(_ host: String) -> Bool { AddressRange.isLoopback(host: host) }

    private static func addressRanges(_ env: Environment, _ name: String, default value: String) throws -> [AddressRange] {
        guard let ranges = AddressRange.list(env.string(name, default: value)) else {
            throw Environment.ConfigurationError(variable: name, reason: "expected addresses or CIDR blocks, comma-separated")
        }
        return ranges
    }
}
