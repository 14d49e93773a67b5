import Delivery
import Foundation
import Platform
import Postgres
import Schema
import ServiceKit

/// The oob-notification service: delivery of one-time codes by e-mail (SMTP) and SMS (an HTTP
/// provider), from requests on signet.oob.requests.
public enum OOBService: SignetService {
    public struct Configuration: Sendable {
        let delivery: DeliveryConfiguration
    }

    public static let name = ServiceName.oob
    public static var migrations: [Migration] { [TemplateStore.migration] }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        Configuration(delivery: try DeliveryConfiguration.fromEnvironment(env, logger: logger))
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        let delivery = DeliveryService(
            configuration: configuration.delivery, smtp: try SMTPClient(configuration: configuration.delivery.smtp),
            sms: try SMSClient(configuration: configuration.delivery.sms), logger: context.logger)
        let templates = TemplateStore(context: context)
        var handlers = TenantDirectory.readModelHandlers
        handlers.merge(delivery.handlers)
        let userData = OOBUserData()
        handlers.merge(UserErasure.handlers(service: name, store: userData))
        return ServiceAssembly(
            routes: { router in
                templates.register(on: &router)
                UserErasure.registerExport(on: &router, context: context, store: userData)
            }, handlers: handlers)
    }
}
