import FoundationEssentials
import Platform
import Postgres

/// A start-up check that this service makes the UAF AppIDs the registration service serves.
///
/// A tenant's AppID is `SIGNET_UAF_APP_ID_BASE/v1/tenants/{tenant}/uaf/facets` on both services
/// (registration puts it in requests and serves the TrustedFacets document there; this service
/// puts it in AuthenticationRequests and checks FinalChallengeParams against it). If the two
/// bases differ, every UAF sign-in fails with `uaf_app_id_mismatch`. Registration announces the
/// AppID in each `UAFAuthenticatorRegistered` event (kept in `uaf_app_ids`); at start-up this
/// compares the latest one announced with the AppID this service makes for the same tenant.
///
/// On a mismatch the service refuses to start (the error names both AppIDs, which are public
/// URLs), unless `SIGNET_UAF_APP_ID_CHECK=warn`: then it logs an error and starts, for the
/// deliberate move of both services to a new base (until registration announces it). Before
/// any UAF registration there is nothing to compare, and the check passes.
struct UAFAppIDCheck: Service {
    let name = "uaf-app-id-check"
    let pool: PostgresPool
    let ceremony: UAFAssertionCeremony
    /// `false` (`SIGNET_UAF_APP_ID_CHECK=warn`): log a mismatch instead of failing.
    let enforce: Bool
    let logger: Logger

    /// `SIGNET_UAF_APP_ID_CHECK`: `enforce` (default) or `warn`.
    static func enforces(_ env: Environment) throws -> Bool {
        try enforces(mode: env.string("SIGNET_UAF_APP_ID_CHECK", default: "enforce"))
    }

    static func enforces(mode: String) throws -> Bool {
        switch mode {
        case "enforce": return true
        case "warn": return false
        default: throw Environment.ConfigurationError(variable: "SIGNET_UAF_APP_ID_CHECK", reason: "expected enforce or warn")
        }
    }

    /// The mismatch, if any: (the AppID registration announced, the one this service makes).
    func mismatch() async throws -> (announced: String, ours: String)? {
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT tenant_id, app_id FROM uaf_app_ids ORDER BY seen_at DESC LIMIT 1")
        }.first
        guard let row, let tenant = row.string("tenant_id"), let announced = row.string("app_id") else { return nil }
        let ours = ceremony.appID(tenant: tenant)
        return announced == ours ? nil : (announced, ours)
    }

    func run() async throws {
        guard let (announced, ours) = try await mismatch() else { return }
        let reason =
            "the registration service serves the AppID \(announced), this service would use \(ours): set the same SIGNET_UAF_APP_ID_BASE on both"
        guard enforce else {
            logger.error("SIGNET_UAF_APP_ID_BASE differs from the registration service's", metadata: ["signet.uaf.app_id": .string(announced)])
            return
        }
        throw Environment.ConfigurationError(variable: "SIGNET_UAF_APP_ID_BASE", reason: reason)
    }

    func shutdown() async {}
}
