import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import TransactionService

/// The transaction service's authorization matrix: every route it registers, with the guard that
/// admits its callers. Transactions are the relying party's; the tcToken keys are public, their rotation admin.
///
/// A route added without its line here fails ``everyRouteHasTheGuardOfTheTable()``; a route
/// cannot be registered without a guard at all (`GuardedRouter`).
@Suite struct TransactionAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/.well-known/jwks.json", "public"),
        ("GET", "/healthz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/readyz", "public"),
        ("POST", "/v1/admin/tenants/{tenant}/tctoken-keys/rotate", "admin"),
        ("GET", "/v1/tenants/{tenant}", "public"),
        ("GET", "/v1/tenants/{tenant}/.well-known/jwks.json", "public"),
        ("POST", "/v1/tenants/{tenant}/transactions", "relyingParty"),
        ("GET", "/v1/tenants/{tenant}/transactions/{transactionId}", "relyingParty"),
        ("PATCH", "/v1/tenants/{tenant}/transactions/{transactionId}", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/transactions/{transactionId}/cancel", "relyingParty"),
        ("GET", "/v1/tenants/{tenant}/transactions/{transactionId}/evidence", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/transactions/{transactionId}/tctoken/verify", "relyingParty"),
        ("POST", "/v1/internal/tenants/{tenant}/user-data", "internal"),
        ("GET", "/v1/internal/tenants/{tenant}/transactions/{transactionId}/tctoken", "internal"),
        ("GET", "/v1/internal/tenants/{tenant}/transactions/{transactionId}/username", "internal"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() async throws {
        let h = try await ServiceHarness<TransactionService>.offline()
        defer { Task { await h.close() } }
        try AuthorizationMatrix.check(h.router.registered, against: Self.matrix)
    }

    /// Every guarded route refuses a request without credentials before its handler runs (no
    /// database is reachable here: a handler that ran would fail otherwise).
    @Test func guardedRoutesRefuseAnonymousCallers() async throws {
        let h = try await ServiceHarness<TransactionService>.offline()
        defer { Task { await h.close() } }
        try await AuthorizationMatrix.checkAnonymousRefused(h)
    }

    @Test func consumedTopicsFollowFromTheHandlers() async throws {
        let h = try await ServiceHarness<TransactionService>.offline()
        defer { Task { await h.close() } }
        #expect(h.assembly.handlers.topics.sorted() == ["signet.registration", "signet.authentication", "signet.oob"].sorted())
    }
}
