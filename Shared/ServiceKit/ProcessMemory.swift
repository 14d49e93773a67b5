import CSignetShims
import Foundation
import Platform

/// glibc malloc settings for a long-running service process, applied once at start-up.
///
/// glibc gives a thread that allocates while the other threads hold their arenas an arena of
/// its own, up to 8 per core (16 on a 2-core machine): each one a 64 MB reservation whose
/// touched pages stay resident and whose free memory is kept for that arena alone. A service
/// runs 20–30 threads (libmicrohttpd, handler threads, librdkafka's, libdispatch's), most of
/// them idle, so it ends up with one arena per thread that ever allocated. Capping the arenas
/// at the number of cores keeps one arena per thread that can run at a time.
/// `ProcessMemory.trim()` then returns the memory that start-up (migrations, route tables,
/// the first Kafka metadata) allocated and freed.
///
/// What it saves and what it costs is printed by `make bench` (README "Benchmark").
public enum ProcessMemory {
    /// The arena cap to apply: `SIGNET_MALLOC_ARENAS` (0 leaves glibc's default), by default
    /// the number of cores; nil when the operator set glibc's own `MALLOC_ARENA_MAX` or an
    /// `arena_max` tunable, which glibc has applied already and which win.
    /// - Throws: `Environment.ConfigurationError` for a value out of 0...1024.
    public static func arenaLimit(_ env: Environment, cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> Int? {
        if env.optionalString("MALLOC_ARENA_MAX") != nil { return nil }
        if let tunables = env.optionalString("GLIBC_TUNABLES"), tunables.contains("glibc.malloc.arena_max") { return nil }
        let limit = try env.int("SIGNET_MALLOC_ARENAS", default: max(2, cores), range: 0...1024)
        return limit == 0 ? nil : limit
    }

    /// Caps glibc's malloc arenas as ``arenaLimit(_:cores:)`` says. Call before the process
    /// starts threads (arenas already created stay).
    /// - Returns: the cap applied, or nil.
    @discardableResult
    public static func configure(_ env: Environment) throws -> Int? {
        guard let limit = try arenaLimit(env) else { return nil }
        return signet_malloc_arena_max(Int32(limit)) == 1 ? limit : nil
    }

    /// Returns free heap memory to the system (glibc `malloc_trim(0)`: the top of each arena
    /// and the free pages inside them). For once after start-up; not for a hot path.
    public static func trim() {
        _ = signet_malloc_trim()
    }
}
