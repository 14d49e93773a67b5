import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
@testable import RegistrationService

/// The registration service's authorization matrix: every route it registers, with the guard that
/// admits its callers. Registration owns the tenants and the users' enrolments: admin for tenants, keys, policy and metadata; the RP or the user themself for a user's credentials and methods (a registration-only token only where a method is registered, listed or suggested; a QR registration's token only on WebAuthn registration options and finish).
///
/// A route added without its line here fails ``everyRouteHasTheGuardOfTheTable()``; a route
/// cannot be registered without a guard at all (`GuardedRouter`).
@Suite struct RegistrationAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/.well-known/jwks.json", "public"),
        ("GET", "/healthz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/readyz", "public"),
        ("GET", "/v1/admin/metadata", "admin"),
        ("POST", "/v1/admin/metadata/refresh", "admin"),
        ("GET", "/v1/admin/metadata/models", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}", "admin"),
        ("POST", "/v1/admin/tenants/{tenant}/api-keys", "admin"),
        ("DELETE", "/v1/admin/tenants/{tenant}/api-keys/{keyId}", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/api-keys/{keyId}", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/fido-policy", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/fido-policy", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/uaf-settings", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/uaf-settings", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/retention", "admin"),
        ("PUT", "/v1/admin/tenants/{tenant}/retention", "admin"),
        ("GET", "/v1/admin/tenants/{tenant}/users", "admin"),
        ("POST", "/v1/internal/tenants/{tenant}/sign-ups", "internal"),
        ("POST", "/v1/internal/tenants/{tenant}/sign-ups/claims", "internal"),
        ("GET", "/v1/tenants/{tenant}", "public"),
        ("GET", "/v1/tenants/{tenant}/api-keys/current", "relyingParty"),
        ("GET", "/v1/tenants/{tenant}/erasures/{erasureId}", "relyingParty"),
        ("GET", "/v1/internal/tenants/{tenant}/erasures/{erasureId}/username", "internal"),
        ("GET", "/v1/internal/tenants/{tenant}/subjects/{subjectRef}/username", "internal"),
        ("GET", "/v1/internal/tenants/{tenant}/users/{username}/vault-subject", "internal"),
        ("GET", "/v1/internal/tenants/{tenant}/users/{username}/credentials/{credentialId}", "internal"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}", "relyingPartyOrSelf"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/data", "relyingPartyOrSelf"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/credentials", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", "relyingPartyOrSelf"),
        ("PATCH", "/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", "relyingPartyOrSelf"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/methods", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/uaf/registrations", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", "relyingPartyOrSelf"),
        ("PATCH", "/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", "relyingPartyOrSelf"),
        ("POST", "/v1/tenants/{tenant}/users/{username}/methods", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("DELETE", "/v1/tenants/{tenant}/users/{username}/methods/{methodId}", "relyingPartyOrSelf"),
        ("PATCH", "/v1/tenants/{tenant}/users/{username}/methods/{methodId}", "relyingPartyOrSelf"),
        ("POST", "/v1/tenants/{tenant}/users/{username}/methods/{methodId}/confirm", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("GET", "/v1/tenants/{tenant}/users/{username}/registration-suggestion", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("POST", "/v1/tenants/{tenant}/webauthn/registrations", "relyingPartyOrRegistrant[signUp,enforcedRegistration,qrRegistration]"),
        ("POST", "/v1/tenants/{tenant}/webauthn/registrations/options", "relyingPartyOrRegistrant[signUp,enforcedRegistration,qrRegistration]"),
        ("GET", "/v1/tenants/{tenant}/webauthn/related-origins", "public"),
        ("GET", "/v1/tenants/{tenant}/uaf/facets", "public"),
        ("POST", "/v1/tenants/{tenant}/uaf/registrations", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
        ("POST", "/v1/tenants/{tenant}/uaf/registrations/requests", "relyingPartyOrRegistrant[signUp,enforcedRegistration]"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() async throws {
        let h = try await ServiceHarness<RegistrationService>.offline()
        defer { Task { await h.close() } }
        try AuthorizationMatrix.check(h.router.registered, against: Self.matrix)
    }

    /// Every guarded route refuses a request without credentials before its handler runs (no
    /// database is reachable here: a handler that ran would fail otherwise).
    @Test func guardedRoutesRefuseAnonymousCallers() async throws {
        let h = try await ServiceHarness<RegistrationService>.offline()
        defer { Task { await h.close() } }
        try await AuthorizationMatrix.checkAnonymousRefused(h)
    }

    @Test func consumedTopicsFollowFromTheHandlers() async throws {
        let h = try await ServiceHarness<RegistrationService>.offline()
        defer { Task { await h.close() } }
        #expect(h.assembly.handlers.topics.sorted() == ["signet.authentication", "signet.registration", "signet.registration.erasures"].sorted())
    }
}
