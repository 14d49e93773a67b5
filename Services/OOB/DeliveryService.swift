import Crypto
import Delivery
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// Delivers one-time codes: consumes `DeliveryRequested` from `signet.oob.requests`, opens the
/// sealed code, resolves the destination through the pii service (an audited read), renders the
/// tenant's template in the requested locale, and sends by SMTP or through the SMS provider's
/// HTTP API, retrying transient failures with backoff. Each outcome is a
/// `DeliveryStatusChanged` event; after the last attempt (or a permanent refusal) the request
/// also goes to `signet.oob.dlq`. Neither the destination nor the code is logged.
struct DeliveryService: Sendable {
    let configuration: DeliveryConfiguration
    let smtp: SMTPClient
    let sms: SMSClient
    /// A backstop per destination, above the budgets the requesting services enforce and tell
    /// their clients about (the authentication service's `CodeSendBudget`: 10 codes per
    /// destination in 10 minutes): a request past it is a bug or an abuse upstream.
    let limiter = DestinationRateLimiter(limit: .init(count: 20, window: .seconds(600)))
    let logger: Logger

    var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(DeliveryRequested.self) { e, envelope, conn in try await deliver(e, envelope: envelope, on: conn) }
        // A delivery may take seconds (the vault, then SMTP or the SMS API, with retries):
        // one record per poll keeps the consumer well inside Kafka's poll interval.
        h.maxBatch = 1
        return h
    }

    func deliver(_ e: DeliveryRequested, envelope: EventEnvelope, on conn: PostgresConnection) async throws {
        let now = Date()
        func status(_ s: String, attempt: Int, reason: String?) async throws {
            try await Outbox.enqueue(
                DeliveryStatusChanged(tenantId: e.tenantId, deliveryId: e.deliveryId, channel: e.channel, status: s, attempt: attempt, reason: reason, changedAt: Date()),
                source: .oob, subject: e.tenantId, key: e.tenantId, on: conn)
        }
        func deadLetter(_ reason: String) async throws {
            try await status("failed", attempt: 0, reason: reason)
            try await Outbox.enqueue(envelope, topic: Topic.deadLetter(service: .oob), key: e.tenantId, on: conn)
            logger.warning("delivery failed", metadata: ["signet.delivery.id": .string(e.deliveryId), LogKey.errorCode: .string(reason)])
        }
        guard e.expiresAt > now else { return try await deadLetter("expired") }
        if case .limited = await limiter.acquire("\(e.tenantId)/\(e.piiRef)") { return try await deadLetter("rate_limited") }
        guard let sealed = Base64URL.decode(e.sealedCode), let codeBytes = try? configuration.deliveryKey.open(sealed, associatedData: Array(e.deliveryId.utf8))
        else { return try await deadLetter("sealed_code_invalid") }
        let code = String(decoding: codeBytes, as: UTF8.self)
        let destination: PIIValue
        do {
            destination = try await configuration.calls.post(
                "\(configuration.piiURL)/v1/internal/tenants/\(e.tenantId)/pii/\(e.piiRef)/read", PIIReadRequest(purpose: "otp_delivery"), as: PIIValue.self)
        } catch {
            // The vault is unreachable: retried by the consumer (nothing was sent).
            throw error
        }
        let values = TemplateValues(
            code: code, minutes: Int(e.parameters["minutes"] ?? "5"), tenant: e.tenantId,
            amount: e.parameters["amount"].map { [$0, e.parameters["currency"]].compactMap { $0 }.joined(separator: " ") }, payee: e.parameters["payee"])
        let kind: MessageKind = e.template == "transaction_otp" ? .transactionOTP : .otp
        var attempt = 0
        do {
            let rendered = try await TemplateStore.templates(for: e.tenantId, on: conn).render(kind, locale: e.locale, tenant: e.tenantId, values: values)
            try await configuration.retry.run { n in
                attempt = n
                switch e.channel {
                case "email":
                    _ = try await smtp.send(try rendered.email(from: configuration.sender, to: try EmailAddress(destination.value)))
                default:
                    _ = try await sms.send(try rendered.sms(to: destination.value))
                }
            }
            try await status("delivered", attempt: attempt, reason: nil)
            logger.info("delivered", metadata: ["signet.delivery.id": .string(e.deliveryId), "signet.delivery.channel": .string(e.channel)])
        } catch let error as DeliveryError {
            try await deadLetter(error.code.rawValue)
        }
    }
}

/// The oob-notification service's delivery settings.
struct DeliveryConfiguration: Sendable {
    let deliveryKey: SealingKeys
    let calls: InternalCalls
    let piiURL: String
    let sender: EmailAddress
    let smtp: SMTPClient.Configuration
    let sms: SMSClient.Configuration
    let retry: RetryPolicy

    static func fromEnvironment(_ env: Environment = Environment(), logger: Logger) throws -> DeliveryConfiguration {
        var smsAuthorization: SMSClient.Authorization = .none
        if let token = env.optionalString("SIGNET_SMS_TOKEN") { smsAuthorization = .bearer(token: token) }
        return DeliveryConfiguration(
            deliveryKey: try ServiceKeys.sealingKeys("SIGNET_DELIVERY_KEY", env, logger: logger),
            calls: try InternalCalls.fromEnvironment(env, service: "oob"),
            piiURL: env.string("SIGNET_PII_URL", default: "http://127.0.0.1:8085"),
            sender: try EmailAddress(env.string("SIGNET_SMTP_FROM", default: "no-reply@signet.localhost"), displayName: "Signet"),
            smtp: SMTPClient.Configuration(
                url: env.string("SIGNET_SMTP_URL", default: "smtp://127.0.0.1:2525"),
                requireSTARTTLS: env.string("SIGNET_SMTP_REQUIRE_TLS", default: "0") == "1", username: env.optionalString("SIGNET_SMTP_USERNAME"),
                password: env.optionalString("SIGNET_SMTP_PASSWORD")),
            sms: SMSClient.Configuration(
                url: env.string("SIGNET_SMS_URL", default: "http://127.0.0.1:2580/messages"), authorization: smsAuthorization,
                defaultSender: env.optionalString("SIGNET_SMS_SENDER")),
            retry: RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(500), factor: 2, maximumDelay: .seconds(5), jitter: 0.5))
    }
}
