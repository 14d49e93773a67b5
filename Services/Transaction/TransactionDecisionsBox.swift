import Platform
import Schema
import ServiceKit

/// The decision handlers, registered before the database pool (and so the keys) exist: they
/// find the keys here once the service is wired.
final class TransactionDecisionsBox: Sendable {
    let keys = Locked<TCTokenKeys?>(nil)

    func handlers(logger: Logger, issuer: String) -> EventHandlers {
        var h = EventHandlers()
        h.on(TransactionDecision.self) { [keys] e, _, conn in
            guard let k = keys.withLock({ $0 }) else { throw EventDecodingError.invalidData("service not ready") }
            try await TransactionDecisions(keys: k, issuer: issuer, logger: logger).apply(e, on: conn)
        }
        h.merge(CredentialOwners.handlers)
        return h
    }
}
