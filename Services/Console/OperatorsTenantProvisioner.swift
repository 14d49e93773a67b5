import Crypto
import Foundation
import HTTPServer
import JSON
import Platform
import Schema

/// Whether the console may take traffic: the operators' tenant exists on the registration
/// service with the console's key, and the authentication service knows it.
public final class ConsoleReadiness: Sendable {
    private let flag = AtomicFlag(false)
    public init() {}
    public var isReady: Bool { flag.isSet }
    func markReady() { flag.set(true) }
}

/// Makes sure the operators' tenant exists, with the console's origin and RP ID and the
/// console's RP API key, through the admin API (idempotent: `PUT` tenant, `PUT` key). Retries
/// until the services answer, then waits for shutdown.
///
/// The key's id is derived from the key (`k_` + 16 hex digits of its SHA-256), so a new
/// `SIGNET_CONSOLE_RP_API_KEY` is registered under a new id; the previous one is revoked by an
/// administrator (`DELETE …/api-keys/{keyId}`) once no replica uses it.
struct OperatorsTenantProvisioner: Service {
    let name = "operators-tenant"
    let configuration: ConsoleService.Configuration
    let upstream: any ConsoleUpstream
    let readiness: ConsoleReadiness
    let logger: Logger
    private let stop = Wakeups()

    init(configuration: ConsoleService.Configuration, upstream: any ConsoleUpstream, readiness: ConsoleReadiness, logger: Logger) {
        self.configuration = configuration
        self.upstream = upstream
        self.readiness = readiness
        self.logger = logger
    }

    static func keyID(for key: String) -> String {
        "k_" + SHA256.hash(Array(key.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    func run() async throws {
        var waiter = stop.makeWaiter()
        var backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(5))
        while !readiness.isReady {
            do {
                try await provision()
                readiness.markReady()
                logger.notice("operators' tenant ready", metadata: ["signet.console.tenant": .string(configuration.operatorsTenant)])
            } catch {
                logger.warning("operators' tenant not ready yet; retrying", metadata: [LogKey.error: "\(error)"])
                guard await waiter.wait(timeout: backoff.next()) else { return }
            }
        }
        await waiter.wait()
    }

    func shutdown() async { stop.finish() }

    private func provision() async throws {
        let tenant = configuration.operatorsTenant
        let body = TenantUpsertRequest(displayName: "Signet operators", rpId: configuration.rpID, origins: [configuration.origin])
        try await upstream.send(.registration, "PUT", "/v1/admin/tenants/\(tenant)", credential: .admin, body: try JSONValueEncoder().encodeToBytes(body))
            .requireSuccess()
        let key = APIKeyImport(apiKey: configuration.operatorsKey)
        try await upstream.send(
            .registration, "PUT", "/v1/admin/tenants/\(tenant)/api-keys/\(Self.keyID(for: configuration.operatorsKey))", credential: .admin,
            body: try JSONValueEncoder().encodeToBytes(key)
        ).requireSuccess()
        // The tenant reaches the authentication service by event; sign-in needs it there.
        try await upstream.send(.authentication, "GET", "/v1/tenants/\(tenant)", credential: .none, body: nil).requireSuccess()
    }
}

private struct APIKeyImport: Codable, Sendable {
    let apiKey: String
}
