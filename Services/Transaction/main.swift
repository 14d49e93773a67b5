import Crypto
import Foundation
import Platform
import ServiceKit

// The transaction service: transactions created by relying parties, confirmed by users through
// the authentication service's sign-in flow (dynamic linking), and tcTokens the RP verifies.
let logger = Logger(label: "signet.transaction")
let env = Environment()
let seal: AES256GCM
let issuer: String
do {
    seal = try AES256GCM(key: try ServiceKeys.key("SIGNET_TCTOKEN_KEY_SEAL", env, logger: logger))
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
    let k = TCTokenKeys(pool: context.pool, seal: seal)
    decisions.keys.withLock { $0 = k }
    TransactionRoutes(context: context, keys: k, issuer: issuer).register(on: &router)
}
