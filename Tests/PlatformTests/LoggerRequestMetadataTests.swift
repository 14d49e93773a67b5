import Testing
@testable import Platform

/// A request's log metadata held as fields (`Logger.RequestMetadata`): read back through the
/// metadata subscript, merged into a written line's metadata, explicit metadata winning.
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

    @Test func mergedIntoALinesMetadataWithoutOverwriting() {
        var request = Logger.RequestMetadata(requestID: "r-2", traceID: "t-2", spanID: "s-2", route: "/healthz")
        var metadata: Logger.Metadata = [LogKey.service: "authentication", LogKey.spanID: "kept"]
        request.merge(into: &metadata)
        #expect(metadata[LogKey.requestID] == .string("r-2"))
        #expect(metadata[LogKey.traceID] == .string("t-2"))
        #expect(metadata[LogKey.spanID] == .string("kept"))
        #expect(metadata[LogKey.route] == .string("/healthz"))
        #expect(metadata[LogKey.tenant] == nil)
        #expect(metadata[LogKey.service] == .string("authentication"))
        #expect(metadata.count == 5)
        request.tenant = "acme"
        request.merge(into: &metadata)
        #expect(metadata[LogKey.tenant] == .string("acme"))
    }
}
