import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import PIIService

/// The pii service's authorization matrix: every route it registers, with the guard that
/// admits its callers. The vault answers other services only.
///
/// A route added without its line here fails ``everyRouteHasTheGuardOfTheTable()``; a route
/// cannot be registered without a guard at all (`GuardedRouter`).
@Suite struct PIIAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/healthz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/readyz", "public"),
        ("POST", "/v1/internal/tenants/{tenant}/pii", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/pii/{ref}/read", "internal"),
        ("DELETE", "/v1/internal/tenants/{tenant}/pii/{ref}", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/user-data", "internal"),
        ("DELETE", "/v1/internal/tenants/{tenant}/subjects/{subject}", "internal"),
        ("GET", "/v1/tenants/{tenant}", "public"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() async throws {
        let h = try await ServiceHarness<PIIService>.offline()
        defer { Task { await h.close() } }
        try AuthorizationMatrix.check(h.router.registered, against: Self.matrix)
    }

    /// Every guarded route refuses a request without credentials before its handler runs (no
    /// database is reachable here: a handler that ran would fail otherwise).
    @Test func guardedRoutesRefuseAnonymousCallers() async throws {
        let h = try await ServiceHarness<PIIService>.offline()
        defer { Task { await h.close() } }
        try await AuthorizationMatrix.checkAnonymousRefused(h)
    }

    @Test func consumedTopicsFollowFromTheHandlers() async throws {
        let h = try await ServiceHarness<PIIService>.offline()
        defer { Task { await h.close() } }
        #expect(h.assembly.handlers.topics.sorted() == ["signet.registration", "signet.pii.requests"].sorted())
    }
}
