import Foundation
import Platform
import ServiceKit

// The transaction service: transactions created by relying parties, confirmed by users through
// the authentication service's sign-in flow (dynamic linking), and tcTokens the RP verifies.
let logger = Logger(label: "signet.transaction")
let env = Environment()
let sealKey: [UInt8]
let issuer: String
do {
    sealKey = try TCTokenKeys.sealKey(env, logger: logger)
    issuer = env.string("SIGNET_TCTOKEN_ISSUER", default: "http://localhost:8080/transaction")
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
// Handlers are built before the pool exists; they reach the keys through this box, filled
// when the routes are wired (before any consumer runs).
let decisions = TransactionDecisionsBox()
await ServiceRuntime.main(
    service: .transaction, migrations: TransactionMigrations.all, handlers: decisions.handlers(logger: logger, issuer: issuer),
    background: BackgroundServices { context in [TransactionExpirer(context: context)] }
) { router, context in
    // The seal key was checked above (32 bytes), so this cannot fail.
    guard let k = try? TCTokenKeys(pool: context.pool, sealKey: sealKey) else { fatalError("tcToken key seal unusable") }
    decisions.keys.withLock { $0 = k }
    TransactionRoutes(context: context, keys: k, issuer: issuer).register(on: &router)
}
