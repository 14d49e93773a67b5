import Testing
@testable import Platform

/// A request's log metadata held as fields (`Logger.RequestMetadata`): read back through the
/// metadata subscript, added to a written line's fields, explicit metadata winning.
@Suite struct LoggerRequestMetadataTests {
    @Test func fieldsReadAsMetadata() {
        var logger = Logger(label: "test", level: .warning)
        #expect(logger[metadataKey: LogKey.requestID] == nil)
        logger.request = Logger.RequestMetadata(requestID: "r-1", traceID: "t-1", spanID: "s-1")
        #expect(logger[metadataKey: LogKey.requestID] == .string("r-1"))
        #expect(logger[metadataKey: LogKey.traceID] == .string("t-1"))
        #expect(logger[metadataKey: LogKey.spanID] == .string("s-1"))
        #expect(logger[metadataKey: LogKey.route] == nil)
        #expect(logger[metadataKey: LogKey.tenant] == nil)
        logger.request?.route = "/v1/tenants/{tenant}/x"
        logger.request?.tenant = "acme"
        #expect(logger[metadataKey: LogKey.route] == .string("/v1/tenants/{tenant}/x"))
        #expect(logger[metadataKey: LogKey.tenant] == .string("acme"))
        // A key set explicitly wins over the request's field.
        logger[metadataKey: LogKey.tenant] = "explicit"
        #expect(logger[metadataKey: LogKey.tenant] == .string("explicit"))
        // Fields are not written into the dictionary itself.
        #expect(logger.metadata[LogKey.requestID] == nil)
    }

    @Test func addedToALinesFieldsWithoutOverwriting() {
        var logger = Logger(label: "test", level: .warning, metadata: [LogKey.service: "authentication", LogKey.spanID: "kept"])
        logger.request = Logger.RequestMetadata(requestID: "r-2", traceID: "t-2", spanID: "s-2", route: "/healthz")
        var fields = Dictionary(uniqueKeysWithValues: logger.lineFields(nil).pairs.map { ($0.key, $0.value) })
        #expect(fields == [LogKey.requestID: "r-2", LogKey.traceID: "t-2", LogKey.spanID: "kept", LogKey.route: "/healthz", LogKey.service: "authentication"])
        logger.request?.tenant = "acme"
        fields = Dictionary(uniqueKeysWithValues: logger.lineFields(nil).pairs.map { ($0.key, $0.value) })
        #expect(fields[LogKey.tenant] == "acme" && fields.count == 6)
    }
}
