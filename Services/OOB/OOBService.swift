import Crypto
import Delivery
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// The oob-notification service: delivery of one-time codes by e-mail (SMTP) and SMS (an HTTP
/// provider), from requests on signet.oob.requests; mobile devices (their keys, push tokens and
/// binding to users); and out-of-band approvals the user's bound device accepts or rejects.
public enum OOBService: SignetService {
    public struct Configuration: Sendable {
        let delivery: DeliveryConfiguration
        /// Seals push tokens and the device identifier keys (`SIGNET_OOB_KEY_SEAL`).
        let seal: SealingKeys
        /// `iss` of device identifier JWTs (`SIGNET_OOB_ISSUER`).
        let issuer: String
        /// A device without a call for this long is inactive (`SIGNET_OOB_INACTIVE_DAYS`).
        let inactiveAfter: TimeInterval
        /// Finished approvals are deleted after this long (`SIGNET_OOB_APPROVAL_RETENTION_DAYS`).
        let approvalRetention: TimeInterval
        let sessions: SessionTokenVerifier
        /// APNs and FCM credentials (either may be absent).
        let push: PushCredentials
        /// How QR payloads are written.
        let qr: QRSettings
    }

    public static let name = ServiceName.oob
    public static var migrations: [Migration] { OOBMigrations.all }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        Configuration(
            delivery: try DeliveryConfiguration.fromEnvironment(env, logger: logger),
            seal: try ServiceKeys.sealingKeys("SIGNET_OOB_KEY_SEAL", env, logger: logger),
            issuer: env.string("SIGNET_OOB_ISSUER", default: "http://localhost:8080/oob"),
            inactiveAfter: Double(try env.int("SIGNET_OOB_INACTIVE_DAYS", default: 90, range: 1...3650)) * 86_400,
            approvalRetention: Double(try env.int("SIGNET_OOB_APPROVAL_RETENTION_DAYS", default: 30, range: 1...3650)) * 86_400,
            sessions: try SessionTokenVerifier.fromEnvironment(env), push: try PushCredentials.fromEnvironment(env), qr: try qrSettings(env))
    }

    static func qrSettings(_ env: Environment) throws -> QRSettings {
        var settings = QRSettings()
        let name = env.string("SIGNET_OOB_QR_DEFAULT_TYPE", default: settings.defaultType.rawValue)
        guard let type = QRPayloadType(rawValue: name) else {
            throw Environment.ConfigurationError(variable: "SIGNET_OOB_QR_DEFAULT_TYPE", reason: "deepLink, universalLink or compact")
        }
        settings.defaultType = type
        settings.appScheme = env.string("SIGNET_OOB_QR_APP_SCHEME", default: settings.appScheme)
        settings.authenticationURL = env.string("SIGNET_AUTHENTICATION_URL", default: settings.authenticationURL)
        guard let first = settings.appScheme.utf8.first, (0x61...0x7A).contains(first), settings.appScheme.utf8.count <= 32,
            settings.appScheme.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { throw Environment.ConfigurationError(variable: "SIGNET_OOB_QR_APP_SCHEME", reason: "a URL scheme: lower-case letters, digits, +, - or .") }
        return settings
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        let delivery = DeliveryService(
            configuration: configuration.delivery, smtp: try SMTPClient(configuration: configuration.delivery.smtp),
            sms: try SMSClient(configuration: configuration.delivery.sms), logger: context.logger)
        let templates = TemplateStore(context: context)
        let devices = DeviceStore(pool: context.pool, seal: configuration.seal, subjectKey: context.configuration.subjectKey)
        let keys = DeviceTokenKeys(pool: context.pool, seal: configuration.seal, naming: .deviceToken)
        let waiters = ApprovalWaiters()
        let deviceRoutes = DeviceRoutes(
            context: context, store: devices, keys: keys, issuer: configuration.issuer, inactiveAfter: configuration.inactiveAfter,
            sessions: configuration.sessions.checkingRevocations(SessionRevocations(pool: context.pool)))
        let push = PushNotifier(context: context, store: devices, credentials: configuration.push)
        let callbacks = ApprovalCallbacks(keys: keys, issuer: configuration.issuer, transport: push.transport)
        let deliveries = ApprovalDeliveryWorker(
            context: context, devices: devices, push: push, callbacks: callbacks, waiters: waiters,
            pushRetry: RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(500), factor: 2, maximumDelay: .seconds(5), jitter: 0.5),
            callbackRetry: RetryPolicy(maximumAttempts: 5, baseDelay: .seconds(1), factor: 2, maximumDelay: .seconds(30), jitter: 0.5))
        let appSettings = AppSettingsStore(context: context)
        let approvalRoutes = ApprovalRoutes(
            context: context, store: devices, waiters: waiters, created: { _ in deliveries.kick() }, finished: { _ in deliveries.kick() },
            internalGuard: configuration.delivery.calls.guardInternal, push: configuration.push, appSettings: appSettings)
        let qrRoutes = QRSessionRoutes(
            context: context, devices: devices, settings: configuration.qr, apps: appSettings, waiters: waiters, calls: configuration.delivery.calls,
            internalGuard: configuration.delivery.calls.guardInternal, inactiveAfter: configuration.inactiveAfter)
        let truCodes = TruCodeRoutes(context: context, devices: devices, settings: configuration.qr, approvals: approvalRoutes)
        let apps = AppAssociationRoutes(context: context, store: appSettings)
        let identityDocuments = IdentityDocumentRoutes(
            context: context, devices: devices, calls: configuration.delivery.calls, registrationURL: context.configuration.registrationURL,
            piiURL: configuration.delivery.piiURL)
        var handlers = TenantDirectory.readModelHandlers
        handlers.merge(delivery.handlers)
        handlers.merge(SessionRevocations.handlers)
        let userData = OOBUserData()
        handlers.merge(
            UserErasure.handlers(
                service: name, store: userData, subjectKey: context.configuration.subjectKey,
                usernames: .registration(context: context)))
        return ServiceAssembly(
            routes: { router in
                templates.register(on: &router)
                deviceRoutes.register(on: &router)
                approvalRoutes.register(on: &router)
                qrRoutes.register(on: &router)
                truCodes.register(on: &router)
                apps.register(on: &router)
                identityDocuments.register(on: &router)
                UserErasure.registerExport(on: &router, context: context, store: userData)
            }, handlers: handlers, background: [
                ApprovalExpirer(
                    context: context, devices: devices, waiters: waiters, finished: { _ in deliveries.kick() },
                    retention: configuration.approvalRetention),
                deliveries,
            ] + (KeyResealer(columns: [devices.sealedPushTokens, keys.sealedColumn(variable: "SIGNET_OOB_KEY_SEAL")], context: context).map { [$0] } ?? []))
    }
}
