#if canImport(Glibc)
import Glibc
#endif

/// Which allocator serves this process's `malloc`: `jemalloc` in the service executables
/// (they link it, see Shared/CAllocator), `libc` elsewhere (tests, fuzzers, tools).
///
/// Read, not assumed: jemalloc's `mallctl` is looked up among the process's symbols, and an
/// allocation made through `malloc` must show in jemalloc's count of this thread's allocated
/// bytes (`thread.allocatedp`). A jemalloc that is loaded but not the process's `malloc` (a
/// library's private copy, or one a sanitizer's interceptors stand in front of) reads `libc`.
public enum MemoryAllocator {
    /// The allocator's name and, for jemalloc, its version and arena count: `jemalloc 5.3.0-0-g… (2 arenas)`.
    public static let current: String = probe()

    /// `jemalloc` or `libc`: the `allocator` label of `signet_process_allocator_info`.
    public static var name: String { current.hasPrefix("jemalloc") ? "jemalloc" : "libc" }

    /// Sets `signet_process_allocator_info{allocator="jemalloc"|"libc"}` to 1 on `/metrics`.
    public static func publish(registry: MetricsRegistry = .shared) {
        Gauge(label: "signet_process_allocator_info", dimensions: [("allocator", name)], registry: registry).record(1)
    }

    private typealias MallCtl = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32

    private static func probe() -> String {
        // RTLD_DEFAULT: the process's own lookup, as any library's call resolves.
        func symbol(_ name: String) -> UnsafeMutableRawPointer? { dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) }
        guard let mallctlSymbol = symbol("mallctl") else { return "libc" }
        let mallctl = unsafeBitCast(mallctlSymbol, to: MallCtl.self)
        var counter: UnsafeMutablePointer<UInt64>?
        var size = MemoryLayout<UnsafeMutablePointer<UInt64>?>.size
        guard mallctl("thread.allocatedp", &counter, &size, nil, 0) == 0, let counter else { return "libc" }
        // The process's malloc and free as any library calls them, through the symbol lookup
        // (and opaque to the optimiser, which could otherwise drop an unused allocation).
        guard let mallocSymbol = symbol("malloc"), let freeSymbol = symbol("free") else { return "libc" }
        let allocate = unsafeBitCast(mallocSymbol, to: (@convention(c) (Int) -> UnsafeMutableRawPointer?).self)
        let release = unsafeBitCast(freeSymbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
        let before = counter.pointee
        guard let block = allocate(4096) else { return "libc" }
        let after = counter.pointee
        release(block)
        guard after &- before >= 4096 else { return "libc" }
        var version: UnsafePointer<CChar>?
        size = MemoryLayout<UnsafePointer<CChar>?>.size
        let text = mallctl("version", &version, &size, nil, 0) == 0 ? version.map { String(cString: $0) } ?? "" : ""
        var arenas: UInt32 = 0
        size = MemoryLayout<UInt32>.size
        let arenaText = mallctl("opt.narenas", &arenas, &size, nil, 0) == 0 ? " (\(arenas) arenas)" : ""
        return "jemalloc \(text)\(arenaText)"
    }
}
