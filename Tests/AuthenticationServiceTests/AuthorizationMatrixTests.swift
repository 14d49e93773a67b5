import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import AuthenticationService

/// The authentication service's authorization matrix: every route it registers, with the guard that
/// admits its callers. Sign-in ceremonies and flows are public (a flow id or a ceremony handle is the capability); admin for policy; the RP for sign-ups, session revocation and registration answers; the RP or admin to unlock; services only for the registration decision.
///
/// A route added without its line here fails ``everyRouteHasTheGuardOfTheTable()``; a route
/// cannot be registered without a guard at all (`GuardedRouter`).
@Suite struct AuthenticationAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/.well-known/jwks.json", "public"),
        ("GET", "/healthz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/readyz", "public"),
        ("GET", "/v1/admin/tenants/{tenant}/authentication-settings", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/authentication-settings", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/rulesets/{kind}", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/rulesets/{kind}", "admin"),
        ("POST", "/v1/admin/tenants/{tenant}/rulesets/{kind}/explain", "admin"),
        ("POST", "/v1/internal/tenants/{tenant}/registration-decision", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/qr-registration-tokens", "internal"),
        ("GET", "/v1/tenants/{tenant}", "public"),
        ("POST", "/v1/tenants/{tenant}/sessions/refresh", "public"),
        ("POST", "/v1/tenants/{tenant}/sessions/revoke", "public"),
        ("DELETE", "/v1/tenants/{tenant}/sessions/{sid}", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/signins", "public"),
        ("POST", "/v1/tenants/{tenant}/signins/quick", "public"),
        ("GET", "/v1/tenants/{tenant}/signins/{signinId}", "public"),
        ("POST", "/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/challenge", "public"),
        ("POST", "/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/verify", "public"),
        ("PUT", "/v1/tenants/{tenant}/signins/{signinId}/registration-answer", "public"),
        ("POST", "/v1/tenants/{tenant}/signins/{signinId}/reject", "public"),
        ("POST", "/v1/tenants/{tenant}/signins/{signinId}/session", "public"),
        ("POST", "/v1/tenants/{tenant}/signups", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/signups/finish", "public"),
        ("POST", "/v1/tenants/{tenant}/users/{username}/methods/{method}/unlock", "relyingPartyOrAdmin"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}/registration-answer", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/webauthn/authentications", "public"),
        ("POST", "/v1/tenants/{tenant}/uaf/authentications", "public"),
        ("POST", "/v1/tenants/{tenant}/uaf/authentications/requests", "public"),
        ("POST", "/v1/tenants/{tenant}/webauthn/authentications/options", "public"),
        ("POST", "/v1/internal/tenants/{tenant}/user-data", "internal"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() async throws {
        let h = try await ServiceHarness<AuthenticationService>.offline()
        defer { Task { await h.close() } }
        try AuthorizationMatrix.check(h.router.registered, against: Self.matrix)
    }

    /// Every guarded route refuses a request without credentials before its handler runs (no
    /// database is reachable here: a handler that ran would fail otherwise).
    @Test func guardedRoutesRefuseAnonymousCallers() async throws {
        let h = try await ServiceHarness<AuthenticationService>.offline()
        defer { Task { await h.close() } }
        try await AuthorizationMatrix.checkAnonymousRefused(h)
    }

    @Test func consumedTopicsFollowFromTheHandlers() async throws {
        let h = try await ServiceHarness<AuthenticationService>.offline()
        defer { Task { await h.close() } }
        #expect(h.assembly.handlers.topics.sorted() == ["signet.registration", "signet.transaction", "signet.oob"].sorted())
    }
}
