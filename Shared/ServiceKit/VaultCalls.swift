import Crypto
import HTTPServer
import Platform
import Schema

/// Storing personal data in the pii service's vault, for the services that keep only its
/// reference. The reference is chosen here and sent with the value, so a caller that never
/// hears the answer (a timeout, a lost connection, its own request cancelled) still knows what
/// to withdraw: a value the vault stored is never left behind with nobody referring to it.
extension InternalCalls {
    /// A new vault reference: `pii_` and 32 lower-case hex digits (128 random bits).
    public static func newVaultReference() -> String { "pii_" + Hex.encode(SecureRandom.bytes(16)) }

    /// Stores `value` under a new reference. When the call does not succeed and the vault did
    /// not refuse it (no answer, a 5xx, this task cancelled), the reference is withdrawn
    /// before the failure is thrown: the vault may have stored it.
    ///
    /// - Parameter withdraw: how; by default ``withdrawFromVault(_:ref:tenant:logger:unlessReferenced:)``
    ///   (a caller with an event that deletes the value passes its own).
    /// - Throws: ``post(_:_:as:timeout:)``'s.
    public func storeInVault(
        _ piiURL: String, tenant: String, subject: String, kind: String, value: String, logger: Logger,
        withdrawingBy withdraw: ((String) async -> Void)? = nil
    ) async throws -> PIIReference {
        let ref = Self.newVaultReference()
        do {
            return try await post(
                "\(piiURL)/v1/internal/tenants/\(tenant)/pii", PIIStoreRequest(subject: subject, kind: kind, value: value, ref: ref), as: PIIReference.self)
        } catch {
            if Self.mayHaveStored(error) {
                if let withdraw { await withdraw(ref) } else { await withdrawFromVault(piiURL, ref: ref, tenant: tenant, logger: logger) }
            }
            throw error
        }
    }

    /// Whether a store that threw `error` may have been stored all the same: anything but the
    /// vault's own refusal (a 4xx problem).
    public static func mayHaveStored(_ error: any Error) -> Bool {
        guard let problem = error as? HTTPError else { return true }
        return !(400..<500).contains(problem.code.status)
    }

    /// Deletes a value nothing here refers to (a store that failed or whose answer was lost, a
    /// replaced value); the vault also refuses a store under `ref` still in flight. Runs to its
    /// end even when the calling task was cancelled (a request past its deadline). A deletion
    /// that fails is logged, with no value or reference in the line: the value stays under its
    /// subject until the user's data is erased.
    ///
    /// - Parameter referenced: asked first, when given: whether a row of the caller's refers to
    ///   `ref` after all (a write whose COMMIT outcome was unknown may have recorded it). True,
    ///   or an error, keeps the value.
    public func withdrawFromVault(
        _ piiURL: String, ref: String, tenant: String, logger: Logger, unlessReferenced referenced: (@Sendable () async throws -> Bool)? = nil
    ) async {
        let url = "\(piiURL)/v1/internal/tenants/\(tenant)/pii/\(ref)"
        let failure = await Self.runUncancelled {
            if let referenced, try await referenced() { return }
            try await delete(url)
        }
        if let failure {
            logger.warning(
                "a value could not be withdrawn from the vault; it stays under the user's subject until the user's data is erased",
                metadata: [LogKey.tenant: "\(tenant)", LogKey.error: "\(failure)"])
        }
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
