/// Kafka topic names. Each service publishes on its own topic; message keys are `tenant` or
/// `tenant/user-reference`, so one tenant's (or user's) events stay in order.
public enum Topic {
    public static let registration = "signet.registration"
    public static let authentication = "signet.authentication"
    public static let transaction = "signet.transaction"
    public static let oob = "signet.oob"
    public static let pii = "signet.pii"
    /// Requests to the oob-notification service (messages to deliver), from any service.
    public static let deliveryRequests = "signet.oob.requests"
    /// Requests to the pii service (values to withdraw from the vault), from any service.
    public static let piiRequests = "signet.pii.requests"
    /// Tallies of erasure parts, from every service, to the registration service (the purge saga).
    public static let erasures = "signet.registration.erasures"
    /// The authentication service's policy changes, read by every one of its replicas (each
    /// drops its compiled copy): a topic apart from the sign-in events, so that a replica
    /// listening for a change a day does not fetch every sign-in of every replica to find it.
    public static let authenticationPolicy = "signet.authentication.policy"

    /// The dead-letter topic of a service's consumer group.
    public static func deadLetter(service: ServiceName) -> String { "signet.\(service.rawValue).dlq" }

    /// Every topic a broker must have, in a stable order (the development broker creates them).
    public static var all: [String] {
        [registration, authentication, transaction, oob, pii, deliveryRequests, erasures, authenticationPolicy, piiRequests] + ServiceName.allCases.map { deadLetter(service: $0) }
    }

    /// Partitions per topic on the development broker.
    public static let developmentPartitions = 3
}

/// The five services.
public enum ServiceName: String, CaseIterable, Sendable {
    case registration, authentication, transaction, oob, pii

    /// CloudEvents `source` of the service's events.
    public var eventSource: String { "/signet/\(rawValue)" }
    /// Its consumer group id.
    public var consumerGroup: String { "signet-\(rawValue)" }
    /// Its default HTTP port in the local stack.
    public var defaultPort: Int {
        switch self {
        case .registration: 8081
        case .authentication: 8082
        case .transaction: 8083
        case .oob: 8084
        case .pii: 8085
        }
    }
}

/// Kafka header names of the CloudEvents binary binding.
public enum CloudEventHeader {
    public static let id = "ce_id"
    public static let source = "ce_source"
    public static let type = "ce_type"
    public static let specVersion = "ce_specversion"
    public static let time = "ce_time"
    public static let subject = "ce_subject"
    public static let contentType = "content-type"
    /// The CloudEvents Distributed Tracing extension's attributes (W3C Trace Context values).
    public static let traceparent = "ce_traceparent"
    public static let tracestate = "ce_tracestate"
    /// Set on dead-lettered messages: why processing failed (no payload values).
    public static let deadLetterReason = "signet_dlq_reason"
    public static let deadLetterGroup = "signet_dlq_group"
    public static let deadLetterOrigin = "signet_dlq_origin"
}
