import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// The operators' tenant's users are the console's operators: on that tenant the routes that
/// change a user (erase, suspend or resume a credential, unlock a method, revoke a session)
/// need the administrator role. An operator who could erase administrator `ada` there could
/// enrol a passkey of their own as `ada` with the enrolment code and sign in as an
/// administrator, or, without the code, lock every administrator out.
@Suite struct ConsoleOperatorsTenantTests {
    /// (method, console path on the operators' tenant, body, service, service path)
    static let changes: [(String, String, String?, ServiceName, String)] = [
        ("DELETE", "/console/api/tenants/operators/users/ada", nil, .registration, "/v1/tenants/operators/users/ada"),
        (
            "PATCH", "/console/api/tenants/operators/users/ada/credentials/Y3JlZA", #"{"status":"suspended"}"#, .registration,
            "/v1/tenants/operators/users/ada/credentials/Y3JlZA"
        ),
        (
            "PATCH", "/console/api/tenants/operators/users/ada/credentials/Y3JlZA", #"{"status":"active"}"#, .registration,
            "/v1/tenants/operators/users/ada/credentials/Y3JlZA"
        ),
        ("POST", "/console/api/tenants/operators/users/ada/methods/fido2/unlock", nil, .authentication, "/v1/tenants/operators/users/ada/methods/fido2/unlock"),
        ("DELETE", "/console/api/tenants/operators/sessions/c2lkLXNpZA", nil, .authentication, "/v1/tenants/operators/sessions/c2lkLXNpZA"),
    ]

    @Test func anOperatorChangesNoUserOfTheOperatorsTenant() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto")
        for (method, path, body, _, _) in Self.changes {
            let response = await fixture.send(method, path, json: body, cookie: cookie, csrf: csrf)
            #expect(response.status == 403 && response.code == "console_role_insufficient", "\(method) \(path)")
        }
        #expect(fixture.upstream.calls.count == 1, "nothing but the sign-in reached a service")
        // The same calls on any other tenant are the operator's.
        for (method, path, body, service, servicePath) in Self.changes {
            let acme = path.replacingOccurrences(of: "/tenants/operators/", with: "/tenants/acme/")
            let response = await fixture.send(method, acme, json: body, cookie: cookie, csrf: csrf)
            #expect(response.status == 200, "\(method) \(acme)")
            let call = try #require(fixture.upstream.calls.last)
            #expect(call.service == service && call.method == method)
            #expect(call.path == servicePath.replacingOccurrences(of: "/tenants/operators/", with: "/tenants/acme/"))
        }
    }

    @Test func anAdministratorChangesUsersOfTheOperatorsTenant() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        for (method, path, body, service, servicePath) in Self.changes {
            let response = await fixture.send(method, path, json: body, cookie: cookie, csrf: csrf)
            #expect(response.status == 200, "\(method) \(path)")
            let call = try #require(fixture.upstream.calls.last)
            #expect(call.service == service && call.method == method && call.path == servicePath && call.body == body)
        }
    }

    /// Reading stays the operator's on every tenant: the data-rights document and an
    /// erasure's status change nothing.
    @Test func anOperatorStillReadsTheOperatorsTenantsUsers() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("otto")
        for path in [
            "/console/api/tenants/operators/users/ada/credentials", "/console/api/tenants/operators/users/ada/data",
            "/console/api/tenants/operators/erasures/er_0123456789abcdef0123456789abcdef",
        ] {
            #expect(await fixture.send("GET", path, cookie: cookie, csrf: nil).status == 200, "\(path)")
        }
    }

    /// The operators' tenant is the configured one (`SIGNET_CONSOLE_TENANT`): there the
    /// operator is refused; a tenant that merely is called `operators` is any tenant.
    @Test func theOperatorsTenantIsTheConfiguredOne() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("otto", environment: ["SIGNET_CONSOLE_TENANT": "staff"])
        let staff = await fixture.send("DELETE", "/console/api/tenants/staff/users/ada", cookie: cookie, csrf: csrf)
        #expect(staff.status == 403 && staff.code == "console_role_insufficient")
        let other = await fixture.send("DELETE", "/console/api/tenants/operators/users/ada", cookie: cookie, csrf: csrf)
        #expect(other.status == 200)
        #expect(fixture.upstream.calls.last?.path == "/v1/tenants/operators/users/ada")
    }
}
