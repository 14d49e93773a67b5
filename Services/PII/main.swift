import Crypto
import Foundation
import Platform
import ServiceKit

// The pii service: the vault of personal data (encrypted per subject, reads audited), which the
// other services reach over internal HTTP calls with opaque references.
let logger = Logger(label: "signet.pii")
let kek: AES256GCM
let calls = InternalCalls.fromEnvironment(service: "pii")
do {
    kek = try AES256GCM(key: try ServiceKeys.key("SIGNET_PII_KEK", logger: logger))
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
await ServiceRuntime.main(service: .pii, migrations: PIIVault.migrations) { router, context in
    PIIVault(context: context, kek: kek, calls: calls).register(on: &router)
}
