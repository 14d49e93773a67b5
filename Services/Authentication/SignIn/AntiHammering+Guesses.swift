import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

/// Guesses made outside a sign-in flow's steps: quick authentication and the direct sign-in
/// route, where the credential presented identifies the user (``AssertionCeremony/owner(of:tenant:)``).
extension AntiHammering {
    /// One guess at `method` of `username`, counted exactly as a step of a sign-in counts it
    /// (``SignInCoordinator/verify(signin:tenant:method:request:client:logger:)``): reserved
    /// before `evaluate` runs, under the row's lock (refused while the method is locked or on
    /// probation); a refusal (400, "Sign-in refused") stands as a failure and may lock the
    /// method; any other error gives the guess back. After a success the reservation is the
    /// caller's: cleared by ``recordSuccess(tenant:username:method:on:)`` in the transaction of
    /// its effect, or given back by ``releaseAttempt(tenant:username:method:settings:)``.
    ///
    /// `counts` may leave a refusal out (it gives the guess back): one that says nothing of
    /// the user's secret, such as an authenticator model the tenant's policy refuses.
    ///
    /// - Throws: 423 `method_locked`, 429 `method_probation` (with `Retry-After`); `evaluate`'s.
    func counted<T>(
        tenant: String, username: String, method: String, settings: AuthenticationSettings, now: Date, logger: Logger,
        counts: (HTTPError) -> Bool = { _ in true }, _ evaluate: () async throws -> T
    ) async throws -> T {
        let standing = try await reserveAttempt(tenant: tenant, username: username, method: method, settings: settings, now: now)
        try Self.require(standing, now: now)
        do {
            return try await evaluate()
        } catch let error as HTTPError where error.code.status == 400 && counts(error) {
            let after = try await recordFailure(tenant: tenant, username: username, method: method, settings: settings, now: now)
            if after == .locked { logger.warning("method locked after repeated failures", metadata: ["signet.method": .string(method)]) }
            throw error
        } catch {
            try? await releaseAttempt(tenant: tenant, username: username, method: method, settings: settings)
            throw error
        }
    }

    /// One guess on the direct sign-in route, which is benchmarked and answers a session from
    /// one query: `evaluate` verifies with `standing: method`, so `record_assertion` itself
    /// refuses a method locked or on probation before anything is written and clears its
    /// failures on success, in the same round trip (AuthenticationMigrations 196). A refusal
    /// (400) is counted afterwards (and may lock the method); when the method is locked or on
    /// probation by then, that is the answer (423, 429) instead, as it is for a good assertion.
    /// Nothing is reserved before the evaluation: guesses sent in parallel may so be evaluated
    /// past the probation threshold by as many as are in flight; the count still reaches it,
    /// and the lock.
    ///
    /// - Throws: 423 `method_locked`, 429 `method_probation` (with `Retry-After`); `evaluate`'s.
    func checked<T>(
        tenant: String, username: String, method: String, settings: AuthenticationSettings, logger: Logger, _ evaluate: () async throws -> T
    ) async throws -> T {
        do {
            return try await evaluate()
        } catch let error as HTTPError where error.code.status == 400 {
            let now = Date()
            let standing = try await reserveAttempt(tenant: tenant, username: username, method: method, settings: settings, now: now)
            if let refusal = Self.refusal(standing, now: now) { throw refusal }
            let after = try await recordFailure(tenant: tenant, username: username, method: method, settings: settings, now: now)
            if after == .locked { logger.warning("method locked after repeated failures", metadata: ["signet.method": .string(method)]) }
            throw error
        }
    }
}
