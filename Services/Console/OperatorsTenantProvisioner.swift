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

/// Makes sure the operators' tenant exists, with the console's origin and RP ID, the
/// console's RP API key, and a FIDO policy that requires user verification, through the admin
/// API (idempotent: `PUT` tenant, `PUT` key, `PUT` policy when it does not require it). Retries
/// until the services answer; then keeps the policy requiring user verification until
/// shutdown: checked again every `policyCheckInterval` (60 s) and at once when the registration
/// service announces a policy of the tenant without it (``recheck()``, from
/// ``OperatorsTenantEvents``), so that an administrator who weakens it through the admin API
/// reopens presence-only sign-ins at the authentication service for moments, not until the
/// console's next restart. (The console's own policy route refuses to weaken it:
/// ``PolicyConsoleRoutes``.)
///
/// The policy is what makes the authentication service ask every sign-in ceremony of the
/// tenant for user verification and refuse an assertion without it, whatever options a caller
/// of its public routes asks for: a stolen security key without its PIN signs no operator in,
/// not even to a session of the services (with which the operator could register a passkey of
/// their own). Of a policy an administrator set, only `userVerification` is changed.
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
    let policyCheckInterval: Duration
    /// Shutdown (finished) and policy checks (signalled).
    private let wakeups = Wakeups()

    init(
        configuration: ConsoleService.Configuration, upstream: any ConsoleUpstream, readiness: ConsoleReadiness, logger: Logger,
        policyCheckInterval: Duration = .seconds(60)
    ) {
        self.configuration = configuration
        self.upstream = upstream
        self.readiness = readiness
        self.logger = logger
        self.policyCheckInterval = policyCheckInterval
    }

    static func keyID(for key: String) -> String {
        "k_" + SHA256.hash(Array(key.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    func run() async throws {
        var waiter = wakeups.makeWaiter()
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
        while await waiter.wait(timeout: policyCheckInterval) {
            do {
                try await requireUserVerification(tenant: configuration.operatorsTenant)
            } catch {
                logger.warning("operators' tenant's FIDO policy not checked; retrying", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    func shutdown() async { wakeups.finish() }

    /// Checks the tenant's FIDO policy now rather than at the next interval (signals coalesce).
    func recheck() { wakeups.signal() }

    func provision() async throws {
        let tenant = configuration.operatorsTenant
        let body = TenantUpsertRequest(displayName: "Signet operators", rpId: configuration.rpID, origins: [configuration.origin])
        try await upstream.send(.registration, "PUT", "/v1/admin/tenants/\(tenant)", credential: .admin, body: try JSONValueEncoder().encodeToBytes(body))
            .requireSuccess()
        let key = APIKeyImport(apiKey: configuration.operatorsKey)
        try await upstream.send(
            .registration, "PUT", "/v1/admin/tenants/\(tenant)/api-keys/\(Self.keyID(for: configuration.operatorsKey))", credential: .admin,
            body: try JSONValueEncoder().encodeToBytes(key)
        ).requireSuccess()
        try await requireUserVerification(tenant: tenant)
        // The tenant reaches the authentication service by event; sign-in needs it there.
        try await upstream.send(.authentication, "GET", "/v1/tenants/\(tenant)", credential: .none, body: nil).requireSuccess()
    }
}

extension OperatorsTenantProvisioner {
    /// Sets the tenant's FIDO policy's `userVerification` to `required`, keeping its other
    /// members as the registration service answers them (its defaults when nobody set one);
    /// nothing is written when it is `required` already. The policy reaches the authentication
    /// service by event (`FIDOPolicyChanged`); until then the console's own check of the
    /// session token's `amr` (``OperatorSignInRoutes``) keeps presence-only sign-ins out.
    ///
    /// - Throws: the registration service's problem, or 503 when it does not answer.
    func requireUserVerification(tenant: String) async throws {
        let path = "/v1/admin/tenants/\(tenant)/fido-policy"
        let answer = try await upstream.send(.registration, "GET", path, credential: .admin, body: nil)
        try answer.requireSuccess()
        guard case .object(var members)? = try? JSONParser.parse(answer.body, maximumDepth: 8) else {
            throw HTTPError(.unavailable, detail: "The registration service answered a FIDO policy that is not an object.")
        }
        guard members["userVerification"]?.stringValue != "required" else { return }
        members["userVerification"] = .string("required")
        try await upstream.send(.registration, "PUT", path, credential: .admin, body: try JSONValueEncoder().encodeToBytes(JSONValue.object(members)))
            .requireSuccess()
        logger.notice("operators' tenant's FIDO policy now requires user verification", metadata: ["signet.console.tenant": .string(tenant)])
    }
}

private struct APIKeyImport: Codable, Sendable {
    let apiKey: String
}
