import Crypto
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// The transaction service: transactions created by relying parties, confirmed by users through
/// the authentication service's sign-in flow (dynamic linking), and tcTokens the RP verifies.
public enum TransactionService: SignetService {
    public struct Configuration: Sendable {
        let seal: SealingKeys
        let issuer: String
        let retentionInterval: Duration
    }

    public static let name = ServiceName.transaction
    public static var migrations: [Migration] { TransactionMigrations.all }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        Configuration(
            seal: try ServiceKeys.sealingKeys("SIGNET_TCTOKEN_KEY_SEAL", env, logger: logger),
            issuer: env.string("SIGNET_TCTOKEN_ISSUER", default: "http://localhost:8080/transaction"),
            retentionInterval: try RetentionPurger.interval(env))
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        let keys = TCTokenKeys(pool: context.pool, seal: configuration.seal, naming: .tcToken)
        let decisions = TransactionDecisions(keys: keys, issuer: configuration.issuer, subjectKey: context.configuration.subjectKey, logger: context.logger)
        let routes = TransactionRoutes(context: context, keys: keys, issuer: configuration.issuer)
        var handlers = TenantDirectory.readModelHandlers
        handlers.merge(decisions.handlers)
        handlers.merge(CredentialOwners.handlers)
        handlers.merge(UAFKeyOwners.handlers)
        handlers.merge(DeviceKeyOwners.handlers)
        let userData = TransactionUserData()
        handlers.merge(TransactionRetention.handlers)
        let purger = RetentionPurger(interval: configuration.retentionInterval, logger: context.logger) { now in
            // With the evidence past its retention, the spent challenges whose key is gone.
            try await context.pool.withConnection { conn in
                try await TransactionRetention.purge(now: now, on: conn) + (try await ConsumedEvidence.purge(on: conn))
            }
        }
        handlers.merge(
            UserErasure.handlers(
                service: name, store: userData, subjectKey: context.configuration.subjectKey,
                usernames: .registration(context: context)))
        return ServiceAssembly(
            routes: { router in
                routes.register(on: &router)
                UserErasure.registerExport(on: &router, context: context, store: userData)
            }, handlers: handlers,
            background: [TransactionExpirer(context: context), purger]
                + (KeyResealer(columns: [keys.sealedColumn(variable: "SIGNET_TCTOKEN_KEY_SEAL")], context: context).map { [$0] } ?? []))
    }
}
