import Platform
import Testing

/// The allocator probe. The test process does not link Shared/CAllocator (only the service
/// executables and signet-bench do), so here it must read glibc's malloc; the stack tests
/// (AllocatorStackTests) read jemalloc from each running service's /metrics.
@Suite struct MemoryAllocatorTests {
    @Test func theTestProcessIsServedByLibcAndSaysSo() {
        #expect(MemoryAllocator.current == "libc")
        #expect(MemoryAllocator.name == "libc")
        let registry = MetricsRegistry()
        MemoryAllocator.publish(registry: registry)
        #expect(registry.render().contains(#"signet_process_allocator_info{allocator="libc"} 1"#))
        #expect(!registry.render().contains("jemalloc"))
    }
}
