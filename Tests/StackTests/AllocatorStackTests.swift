import Schema
import TestSupport
import Testing

/// Each service executable runs on jemalloc (Shared/CAllocator links it; README "The request
/// path"): its /metrics says which allocator serves its malloc, as read at run time by
/// Platform's MemoryAllocator (a jemalloc that were loaded but not serving malloc would read libc).
@Suite(.serialized) struct AllocatorStackTests {
    @Test func everyServiceIsServedByJemalloc() async throws {
        for service in ServiceName.allCases {
            let metrics = try await TestHTTP.send("GET", "\(Stack.url(service))/metrics")
            #expect(metrics.status == 200, "\(service.rawValue)")
            #expect(
                metrics.text.contains(#"signet_process_allocator_info{allocator="jemalloc"} 1"#),
                "\(service.rawValue): \(metrics.text.split(separator: "\n").filter { $0.contains("allocator") })")
        }
    }
}
