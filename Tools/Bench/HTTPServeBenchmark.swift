import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

#if canImport(Glibc)
import Glibc
#endif

/// `signet-bench serve-healthz PORT [seconds]`: serves `GET /healthz` exactly as a service does
/// (``HTTPServer`` in the mode `SIGNET_HTTP_MODE` names, `SIGNET_HTTP_THREADS` loops or
/// workers, the same ``HTTPApplication`` responder, the services' own `/healthz` handler
/// ``HealthRoutes/liveness(version:)`` on an open ``GuardedRouter`` route), without PostgreSQL,
/// Kafka or a stack, on 127.0.0.1:PORT for `seconds` (then it drains and exits). `scripts/bench.sh healthz` runs wrk against it
/// beside nginx's `return 200`, so the HTTP layer's figure needs no stack and no lock.
func serveHealthz(port: Int, seconds: Double) async throws {
    var router = GuardedRouter()
    router.getOpen("/healthz", immediate: HealthRoutes.liveness(version: BuildInfo.version))
    let logger = Logger(label: "signet-bench.http", level: .warning)
    let app = HTTPApplication(router: router.router, logger: logger)
    let env = ProcessInfo.processInfo.environment
    let threads = env["SIGNET_HTTP_THREADS"].flatMap(Int.init) ?? max(2, ProcessInfo.processInfo.activeProcessorCount)
    // SIGNET_BENCH_CONNECTION_MEMORY: libmicrohttpd's per-connection memory for an A/B of that
    // setting alone (the server's default otherwise).
    let memory = env["SIGNET_BENCH_CONNECTION_MEMORY"].flatMap(Int.init) ?? HTTPServerConfiguration.defaultConnectionMemoryBytes
    let configuration = HTTPServerConfiguration(
        host: "127.0.0.1", port: port, threads: threads, unlimitedAddresses: AddressRange("127.0.0.0/8").map { [$0] } ?? [],
        connectionMemoryBytes: memory)
    let server = HTTPServer(configuration: configuration, logger: logger, immediate: { app.respondImmediately(to: $0) }) { await app.respond(to: $0) }
    try server.start()
    print("serving /healthz on 127.0.0.1:\(server.boundPort) mode \(configuration.mode.rawValue) threads \(threads) connection memory \(memory) allocator \(MemoryAllocator.current) pid \(getpid())")
    fflush(nil)
    try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    await server.shutdown()
}
