import CRDKafka

/// Where the Kafka cluster is and how this client names itself.
public struct KafkaConfiguration: Sendable {
    /// `host:port[,host:port…]`, from `SIGNET_KAFKA_BROKERS`.
    public var brokers: String
    public var clientID: String
    /// Extra librdkafka properties (for production: `security.protocol`, SASL, TLS…).
    public var properties: [String: String]

    public init(brokers: String, clientID: String, properties: [String: String] = [:]) {
        self.brokers = brokers
        self.clientID = clientID
        self.properties = properties
    }
}

/// A librdkafka failure; `description` carries librdkafka's error name and message (which
/// names brokers and topics, never payloads).
public struct KafkaError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let description: String

    init(code: Int32, message: String) {
        self.code = code
        self.description = "KafkaError(\(message))"
    }

    init(_ err: rd_kafka_resp_err_t) {
        code = err.rawValue
        description = "KafkaError(\(String(cString: rd_kafka_err2name(err))): \(String(cString: rd_kafka_err2str(err))))"
    }
}

/// Builds an `rd_kafka_conf_t` from properties; the caller hands it to `rd_kafka_new`.
func makeRDKafkaConf(_ properties: [String: String]) throws -> OpaquePointer {
    guard let conf = rd_kafka_conf_new() else { throw KafkaError(code: -1, message: "rd_kafka_conf_new failed") }
    var errstr = [CChar](repeating: 0, count: 512)
    for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
        if rd_kafka_conf_set(conf, key, value, &errstr, errstr.count) != RD_KAFKA_CONF_OK {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: -1, message: "invalid property \(key): \(stringFromCBuffer(errstr))")
        }
    }
    rd_kafka_conf_set_log_cb(conf, rdkafkaLogCallback)
    return conf
}

let rdkafkaLogger = Platform.Logger(label: "rdkafka")

/// librdkafka's internal log lines, routed to the process logger (called on its threads).
private let rdkafkaLogCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = {
    _, level, fac, buf in
    let facility = fac.map { String(cString: $0) } ?? ""
    let message = buf.map { String(cString: $0) } ?? ""
    let l: Platform.Logger.Level =
        switch level {
        case 0...3: .error
        case 4: .warning
        case 5, 6: .info
        default: .debug
        }
    rdkafkaLogger.log(level: l, message, metadata: ["rdkafka.facility": .string(facility)])
}

import Platform
