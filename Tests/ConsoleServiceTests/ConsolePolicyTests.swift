import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// FIDO policy, authentication settings, tcToken key rotation and unlocking, through the console.
@Suite struct ConsolePolicyTests {
    /// (method, console path, body, least role, service, service path)
    static let routes: [(String, String, String?, OperatorRole, ServiceName, String)] = [
        ("GET", "/console/api/tenants/acme/fido-policy", nil, .viewer, .registration, "/v1/admin/tenants/acme/fido-policy"),
        ("PUT", "/console/api/tenants/acme/fido-policy", #"{"attestation":"none"}"#, .administrator, .registration, "/v1/admin/tenants/acme/fido-policy"),
        ("GET", "/console/api/tenants/acme/authentication-settings", nil, .viewer, .authentication, "/v1/admin/tenants/acme/authentication-settings"),
        ("PUT", "/console/api/tenants/acme/authentication-settings", #"{"antiHammering":{}}"#, .administrator, .authentication, "/v1/admin/tenants/acme/authentication-settings"),
        ("POST", "/console/api/tenants/acme/tctoken-keys/rotate", nil, .administrator, .transaction, "/v1/admin/tenants/acme/tctoken-keys/rotate"),
        ("POST", "/console/api/tenants/acme/users/alice/methods/fido2/unlock", nil, .operator, .authentication, "/v1/tenants/acme/users/alice/methods/fido2/unlock"),
    ]

    @Test(arguments: [("vera", OperatorRole.viewer), ("otto", .operator), ("ada", .administrator)])
    func eachRouteForwardsForItsRolesOnly(_ username: String, _ role: OperatorRole) async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn(username)
        for (method, path, body, least, service, servicePath) in Self.routes {
            let before = fixture.upstream.calls.count
            let response = await fixture.send(method, path, json: body, cookie: cookie, csrf: csrf)
            if role >= least {
                #expect(response.status == 200, "\(username) \(method) \(path)")
                #expect(fixture.upstream.calls.last == UpstreamCall(service: service, method: method, path: servicePath, credential: .admin, body: body))
            } else {
                #expect(response.status == 403 && response.code == "console_role_insufficient", "\(username) \(method) \(path)")
                #expect(fixture.upstream.calls.count == before)
            }
        }
    }

    /// The metadata's models, for every role, with the query checked and encoded.
    @Test func theMetadataModelsAreReadWithTheAdminToken() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera")
        let response = await fixture.send("GET", "/console/api/metadata/models?q=Yubi%26limit%3D100", cookie: cookie, csrf: nil)
        #expect(response.status == 200)
        #expect(fixture.upstream.calls.last == UpstreamCall(
            service: .registration, method: "GET", path: "/v1/admin/metadata/models?q=Yubi%26limit%3D100&limit=20", credential: .admin, body: nil))
        let bad = await fixture.send("GET", "/console/api/metadata/models?q=a%0Ab", cookie: cookie, csrf: nil)
        #expect(bad.status == 400 && bad.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 2)
    }

    @Test func aMethodNameThatIsNotOneNeverReachesAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto")
        let response = await fixture.send("POST", "/console/api/tenants/acme/users/alice/methods/FIDO2%3F/unlock", cookie: cookie, csrf: csrf)
        #expect(response.status == 400 && response.code == "invalid_field")
        #expect(fixture.upstream.calls.count == 1)
    }

    /// The operators' tenant's FIDO policy keeps `userVerification: required` through the
    /// console: a document with less (or without the member, which means `preferred`) is
    /// refused before it reaches the registration service; other tenants' are not checked.
    @Test func theOperatorsTenantsPolicyKeepsUserVerificationRequired() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        for body in [#"{"userVerification":"preferred"}"#, #"{"userVerification":"discouraged","residentKey":"required"}"#, "{}", #"{"userVerification":null}"#] {
            let response = await fixture.send("PUT", "/console/api/tenants/operators/fido-policy", json: body, cookie: cookie, csrf: csrf)
            #expect(response.status == 409 && response.code == "console_operators_policy_protected", "\(body)")
        }
        #expect(fixture.upstream.calls.count == 1, "nothing but the sign-in reached a service")
        let kept = #"{"residentKey":"required","userVerification":"required"}"#
        let allowed = await fixture.send("PUT", "/console/api/tenants/operators/fido-policy", json: kept, cookie: cookie, csrf: csrf)
        #expect(allowed.status == 200)
        #expect(fixture.upstream.calls.last == UpstreamCall(
            service: .registration, method: "PUT", path: "/v1/admin/tenants/operators/fido-policy", credential: .admin, body: kept))
        let other = await fixture.send("PUT", "/console/api/tenants/acme/fido-policy", json: #"{"userVerification":"preferred"}"#, cookie: cookie, csrf: csrf)
        #expect(other.status == 200)
    }
}
