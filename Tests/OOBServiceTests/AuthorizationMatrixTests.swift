import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import OOBService

/// The oob service's authorization matrix: every route it registers, with the guard that
/// admits its callers. Templates are admin.
///
/// A route added without its line here fails ``everyRouteHasTheGuardOfTheTable()``; a route
/// cannot be registered without a guard at all (`GuardedRouter`).
@Suite struct OOBAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/healthz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/readyz", "public"),
        ("DELETE", "/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", "admin"),
        ("GET", "/v1/tenants/{tenant}", "public"),
        ("POST", "/v1/internal/tenants/{tenant}/user-data", "internal"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() async throws {
        let h = try await ServiceHarness<OOBService>.offline()
        defer { Task { await h.close() } }
        try AuthorizationMatrix.check(h.router.registered, against: Self.matrix)
    }

    /// Every guarded route refuses a request without credentials before its handler runs (no
    /// database is reachable here: a handler that ran would fail otherwise).
    @Test func guardedRoutesRefuseAnonymousCallers() async throws {
        let h = try await ServiceHarness<OOBService>.offline()
        defer { Task { await h.close() } }
        try await AuthorizationMatrix.checkAnonymousRefused(h)
    }

    @Test func consumedTopicsFollowFromTheHandlers() async throws {
        let h = try await ServiceHarness<OOBService>.offline()
        defer { Task { await h.close() } }
        #expect(h.assembly.handlers.topics.sorted() == ["signet.registration", "signet.oob.requests"].sorted())
    }
}
