import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema

/// Storing personal data in the pii service's vault, for the services that keep only its
/// reference. The reference is chosen here and sent with the value, so a caller that never
/// hears the answer (a timeout, a lost connection, its own request cancelled) still knows what
/// to withdraw: a value the vault stored is never left behind with nobody referring to it.
extension InternalCalls {
    /// A new vault reference: `pii_` and 32 lower-case hex digits (128 random bits).
    public static func newVaultReference() -> String { "pii_" + Hex.encode(SecureRandom.bytes(16)) }

    /// Stores `value` under a new reference. When the call does not succeed and the vault did
    /// not refuse it (no answer, a 5xx, this task cancelled), the reference is withdrawn by
    /// `withdraw` before the failure is thrown: the vault may have stored it.
    ///
    /// - Parameter withdraw: how (a caller with an event that deletes the value passes its own;
    ///   others ``storeInVault(_:tenant:subject:kind:value:withdrawingThrough:source:)``).
    /// - Throws: ``post(_:_:as:timeout:)``'s.
    public func storeInVault(
        _ piiURL: String, tenant: String, subject: String, kind: String, value: String, withdrawingBy withdraw: (String) async -> Void
    ) async throws -> PIIReference {
        let ref = Self.newVaultReference()
        do {
            return try await post(
                "\(piiURL)/v1/internal/tenants/\(tenant)/pii", PIIStoreRequest(subject: subject, kind: kind, value: value, ref: ref), as: PIIReference.self)
        } catch {
            if Self.mayHaveStored(error) { await withdraw(ref) }
            throw error
        }
    }

    /// ``storeInVault(_:tenant:subject:kind:value:withdrawingBy:)`` withdrawing through the
    /// outbox of `context` (``withdrawFromVault(_:ref:tenant:through:source:unlessReferenced:)``).
    public func storeInVault(
        _ piiURL: String, tenant: String, subject: String, kind: String, value: String, withdrawingThrough context: ServiceContext, source: ServiceName
    ) async throws -> PIIReference {
        try await storeInVault(piiURL, tenant: tenant, subject: subject, kind: kind, value: value) { ref in
            await withdrawFromVault(piiURL, ref: ref, tenant: tenant, through: context, source: source)
        }
    }

    /// Whether a store that threw `error` may have been stored all the same: anything but the
    /// vault's own refusal (a 4xx problem).
    public static func mayHaveStored(_ error: any Error) -> Bool {
        guard let problem = error as? HTTPError else { return true }
        return !(400..<500).contains(problem.code.status)
    }

    /// Deletes a value nothing here refers to through the vault's internal DELETE (the vault
    /// also refuses a store under `ref` still in flight). Runs to its end even when the calling
    /// task was cancelled (a request past its deadline). A deletion that fails is logged, with
    /// no value or reference in the line: the value stays under its subject until the user's
    /// data is erased. A service with a database withdraws through its outbox instead
    /// (``withdrawFromVault(_:ref:tenant:through:source:unlessReferenced:)``), which falls back
    /// to this.
    func withdrawFromVault(_ piiURL: String, ref: String, tenant: String, logger: Logger) async {
        let url = "\(piiURL)/v1/internal/tenants/\(tenant)/pii/\(ref)"
        if let failure = await Self.runUncancelled({ try await delete(url) }) {
            Self.logKept(tenant: tenant, failure: failure, logger: logger)
        }
    }

    /// The line a value that could not be withdrawn leaves: no value or reference in it.
    private static func logKept(tenant: String, failure: any Error, logger: Logger) {
        logger.warning(
            "a value could not be withdrawn from the vault; it stays under the user's subject until the user's data is erased",
            metadata: [LogKey.tenant: "\(tenant)", LogKey.error: "\(failure)"])
    }

    /// Withdraws `ref` durably: a ``VaultWithdrawalRequested`` event enqueued in `context`'s
    /// outbox (the relay sends it whenever the vault's consumer can take it, across this
    /// service's restarts and the vault's outages), in a transaction of its own that first asks
    /// `referenced`, when given, whether a row of the caller's refers to `ref` after all (a write
    /// whose COMMIT outcome was unknown may have recorded it): the answer and the request are
    /// one transaction. Runs to its end even when the calling task was cancelled.
    ///
    /// When that transaction fails (the database unreachable), a withdrawal with nothing to
    /// ask falls back to the vault's internal DELETE (``withdrawFromVault(_:ref:tenant:logger:)``);
    /// one whose reference could not be checked keeps the value. A value kept is logged, with
    /// no value or reference in the line, and stays under its subject until the user's data is
    /// erased.
    public func withdrawFromVault(
        _ piiURL: String, ref: String, tenant: String, through context: ServiceContext, source: ServiceName,
        unlessReferenced referenced: (@Sendable (PostgresConnection) async throws -> Bool)? = nil
    ) async {
        let failure = await Self.runUncancelled {
            try await context.withTransaction { conn in
                if let referenced, try await referenced(conn) { return }
                try await Self.requestVaultWithdrawal(ref, tenant: tenant, source: source, on: conn)
            }
        }
        guard let failure else { return }
        if referenced == nil {
            await withdrawFromVault(piiURL, ref: ref, tenant: tenant, logger: context.logger)
        } else {
            Self.logKept(tenant: tenant, failure: failure, logger: context.logger)
        }
    }

    /// Enqueues the withdrawal of `ref` from the vault in `conn`'s transaction (a value this
    /// transaction stops referring to leaves the vault if, and only if, it commits).
    public static func requestVaultWithdrawal(_ ref: String, tenant: String, source: ServiceName, on conn: PostgresConnection) async throws {
        try await Outbox.enqueue(
            VaultWithdrawalRequested(tenantId: tenant, piiRef: ref, requestedAt: Date()), source: source, subject: tenant, key: tenant, on: conn)
    }

    /// Runs `body` to its end in a task of its own, not cancelled with the caller's (a request
    /// past its deadline, whose cancellation would cancel its statements and calls too), and
    /// returns what it threw.
    public static func runUncancelled(_ body: @escaping @Sendable () async throws -> Void) async -> (any Error)? {
        await Task {
            do {
                try await body()
                return nil
            } catch {
                return error
            }
        }.value
    }
}
