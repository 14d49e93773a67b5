import Crypto
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// The pii service: the vault of personal data (encrypted per subject, reads audited), which the
/// other services reach over internal HTTP calls with opaque references.
public enum PIIService: SignetService {
    public struct Configuration: Sendable {
        let kek: SealingKeys
        let calls: InternalCalls
        let retentionInterval: Duration
    }

    public static let name = ServiceName.pii
    public static var migrations: [Migration] { PIIVault.migrations }

    public static func configuration(_ env: Environment, logger: Logger) async throws -> Configuration {
        Configuration(
            kek: try ServiceKeys.sealingKeys("SIGNET_PII_KEK", env, logger: logger),
            calls: try InternalCalls.fromEnvironment(env, service: "pii"),
            retentionInterval: try RetentionPurger.interval(env))
    }

    public static func assemble(_ configuration: Configuration, context: ServiceContext) throws -> ServiceAssembly {
        let vault = PIIVault(context: context, kek: configuration.kek, calls: configuration.calls)
        var handlers = TenantDirectory.readModelHandlers
        handlers.merge(PIIVault.withdrawalHandlers)
        handlers.merge(UserErasure.handlers(service: name, store: vault, subjectKey: context.configuration.subjectKey, usernames: .unneeded))
        // Withdrawn references are remembered a day (PIIVault.withdrawalMemory).
        let purger = RetentionPurger(interval: configuration.retentionInterval, logger: context.logger) { now in
            try await context.pool.withConnection { try await PIIVault.purgeWithdrawn(now: now, on: $0) }
        }
        let resealer = KeyResealer(columns: [vault.wrappedKeys], context: context)
        return ServiceAssembly(
            routes: { router in
                vault.register(on: &router)
                UserErasure.registerExport(on: &router, context: context, store: vault)
            }, handlers: handlers, background: [purger] + (resealer.map { [$0] } ?? []))
    }
}
