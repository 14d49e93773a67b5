import Delivery
import Foundation
import Platform
import ServiceKit

// The oob-notification service: delivery of one-time codes by e-mail (SMTP) and SMS (an HTTP
// provider), from requests on signet.oob.requests.
let logger = Logger(label: "signet.oob")
let delivery: DeliveryService
do {
    let configuration = try DeliveryConfiguration.fromEnvironment(logger: logger)
    delivery = DeliveryService(
        configuration: configuration, smtp: try SMTPClient(configuration: configuration.smtp), sms: try SMSClient(configuration: configuration.sms),
        logger: logger)
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
await ServiceRuntime.main(service: .oob, migrations: [TemplateStore.migration], handlers: delivery.handlers) { router, context in
    TemplateStore(context: context).register(on: &router)
}
