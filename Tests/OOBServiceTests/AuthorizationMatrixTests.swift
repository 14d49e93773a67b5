import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import OOBService

/// The oob service's authorization matrix: every route it registers, with the guard that
/// admits its callers. Templates are admin; a device creates or updates itself with the key
/// it carries (`deviceKeyHolder`) and signs every later call (`device`); the RP, or the user
/// with a session token, binds, lists and unbinds; approvals are the RP's; a QR session's status is
/// read by the RP or by the page holding its watch token (`relyingPartyOrWatcher`); a tenant's app
/// settings are admin, its app association files public (the tenant is the `Host`'s).
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
        ("GET", "/.well-known/jwks.json", "public"),
        ("GET", "/v1/tenants/{tenant}/.well-known/jwks.json", "public"),
        ("POST", "/v1/tenants/{tenant}/devices", "deviceKeyHolder"),
        ("GET", "/v1/tenants/{tenant}/devices/{deviceId}", "device"),
        ("PUT", "/v1/tenants/{tenant}/devices/{deviceId}/push-token", "device"),
        ("POST", "/v1/tenants/{tenant}/users/{username}/devices", "relyingPartyOrSelf"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/devices", "relyingPartyOrSelf"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}/devices/{deviceId}", "relyingPartyOrSelf"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/revoke", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/approvals", "relyingParty"),
        ("GET", "/v1/tenants/{tenant}/approvals/{approvalId}", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/approvals/{approvalId}/cancel", "relyingParty"),
        ("POST", "/v1/internal/tenants/{tenant}/approvals", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/approvals/{approvalId}/read", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/approvals/{approvalId}/evidence", "internal"),
        ("GET", "/v1/tenants/{tenant}/devices/{deviceId}/approvals", "device"),
        ("GET", "/v1/tenants/{tenant}/devices/{deviceId}/approvals/{approvalId}", "device"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/approvals/{approvalId}/decision", "device"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/identity-documents", "device"),
        ("POST", "/v1/tenants/{tenant}/qr-sessions", "relyingParty"),
        ("POST", "/v1/internal/tenants/{tenant}/qr-sessions", "internal"),
        ("GET", "/v1/tenants/{tenant}/qr-sessions/{qrSessionId}", "relyingPartyOrWatcher"),
        ("POST", "/v1/internal/tenants/{tenant}/qr-sessions/{qrSessionId}/read", "internal"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/claim", "device"),
        ("GET", "/v1/tenants/{tenant}/devices/{deviceId}/qr-capabilities", "device"),
        ("POST", "/v1/tenants/{tenant}/trucodes", "relyingParty"),
        ("GET", "/v1/tenants/{tenant}/trucodes/{truCodeId}", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/trucodes/{truCodeId}/approvals", "relyingParty"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/trucodes/{truCodeId}/pair", "device"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/decision", "device"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/bless-sessions", "device"),
        ("POST", "/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/approval", "device"),
        ("GET", "/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}", "device"),
        ("PUT", "/v1/admin/tenants/{tenant}/app-settings", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/app-settings", "admin"),
        ("DELETE", "/v1/admin/tenants/{tenant}/app-settings", "admin"),
        ("GET", "/.well-known/apple-app-site-association", "public"),
        ("GET", "/.well-known/assetlinks.json", "public"),
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
        #expect(h.assembly.handlers.topics.sorted() == ["signet.registration", "signet.authentication", "signet.oob.requests"].sorted())
    }
}
