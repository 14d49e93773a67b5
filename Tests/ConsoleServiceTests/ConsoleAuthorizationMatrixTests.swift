import HTTPServer
import Testing
@testable import ConsoleService

/// The console's authorization matrix: every route with the guard that admits its callers.
/// The page and the ceremonies are public; everything else needs an operator's session of at
/// least the named role (``ConsoleGuards``), and the routes that change a user need an
/// administrator's on the operators' tenant (`[operatorsTenant:administrator]`).
@Suite struct ConsoleAuthorizationMatrixTests {
    static let matrix: [(method: String, template: String, guard: String)] = [
        ("GET", "/healthz", "public"),
        ("GET", "/readyz", "public"),
        ("GET", "/metrics", "public"),
        ("GET", "/console/index.html", "public"),
        ("GET", "/console/console.js", "public"),
        ("GET", "/console/webauthn-json.js", "public"),
        ("GET", "/console/console.css", "public"),
        ("POST", "/console/api/sign-in/options", "public"),
        ("POST", "/console/api/sign-in", "public"),
        ("POST", "/console/api/enrolments/options", "public"),
        ("POST", "/console/api/enrolments", "public"),
        ("GET", "/console/api/session", "consoleViewer"),
        ("POST", "/console/api/sign-out", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/api-keys", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/api-keys/{keyId}/rotate", "consoleAdministrator"),
        ("DELETE", "/console/api/tenants/{tenant}/api-keys/{keyId}", "consoleAdministrator"),
        ("GET", "/console/api/tenants/{tenant}/rulesets/{kind}", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/rulesets/{kind}", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/rulesets/{kind}/explain", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/users/{username}/credentials", "consoleViewer"),
        ("GET", "/console/api/events", "consoleViewer"),
        ("GET", "/console/api/events/counts", "consoleViewer"),
        ("GET", "/console/api/services", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/fido-policy", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/fido-policy", "consoleAdministrator"),
        ("GET", "/console/api/tenants/{tenant}/authentication-settings", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/authentication-settings", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/tctoken-keys/rotate", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/users/{username}/methods/{method}/unlock", "consoleOperator[operatorsTenant:administrator]"),
        ("PATCH", "/console/api/tenants/{tenant}/users/{username}/credentials/{credentialId}", "consoleOperator[operatorsTenant:administrator]"),
        ("GET", "/console/api/tenants/{tenant}/uaf-settings", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/uaf-settings", "consoleAdministrator"),
        ("GET", "/console/api/tenants/{tenant}/app-settings", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/app-settings", "consoleAdministrator"),
        ("DELETE", "/console/api/tenants/{tenant}/app-settings", "consoleAdministrator"),
        ("GET", "/console/api/tenants/{tenant}/templates/{kind}/{locale}", "consoleViewer"),
        ("PUT", "/console/api/tenants/{tenant}/templates/{kind}/{locale}", "consoleAdministrator"),
        ("DELETE", "/console/api/tenants/{tenant}/templates/{kind}/{locale}", "consoleAdministrator"),
        ("POST", "/console/api/tenants/{tenant}/templates/{kind}/{locale}/preview", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/users", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/users/{username}/methods", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/users/{username}/devices", "consoleViewer"),
        ("GET", "/console/api/tenants/{tenant}/users/{username}/data", "consoleOperator"),
        ("DELETE", "/console/api/tenants/{tenant}/users/{username}", "consoleOperator[operatorsTenant:administrator]"),
        ("GET", "/console/api/tenants/{tenant}/erasures/{erasureId}", "consoleOperator"),
        ("DELETE", "/console/api/tenants/{tenant}/sessions/{sid}", "consoleOperator[operatorsTenant:administrator]"),
        ("GET", "/console/api/metadata/models", "consoleViewer"),
    ]

    @Test func everyRouteHasTheGuardOfTheTable() throws {
        let fixture = try ConsoleFixture()
        let expected = Set(Self.matrix.map { RegisteredRoute(method: $0.method, template: $0.template, guardName: $0.guard) })
        let actual = Set(fixture.app.router.registered)
        #expect(actual.count == fixture.app.router.registered.count, "a route is registered twice")
        #expect(actual.subtracting(expected).isEmpty, "not in the matrix: \(actual.subtracting(expected))")
        #expect(expected.subtracting(actual).isEmpty, "in the matrix, not registered: \(expected.subtracting(actual))")
    }

    /// Without a session every guarded route answers 401 `console_session_required` and no
    /// service is called.
    @Test func guardedRoutesRefuseCallersWithoutASession() async throws {
        let fixture = try ConsoleFixture()
        for route in fixture.app.router.registered where route.guardName != RouteGuard.open.name {
            let path = route.template.replacingOccurrences(of: "{tenant}", with: "acme").replacingOccurrences(of: "{keyId}", with: "k_0123456789abcdef")
                .replacingOccurrences(of: "{kind}", with: "authentication").replacingOccurrences(of: "{username}", with: "alice")
                .replacingOccurrences(of: "{credentialId}", with: "Y3JlZA").replacingOccurrences(of: "{method}", with: "fido2")
                .replacingOccurrences(of: "{locale}", with: "en")
                .replacingOccurrences(of: "{erasureId}", with: "er_0123456789abcdef0123456789abcdef").replacingOccurrences(of: "{sid}", with: "c2lk")
            let response = await fixture.send(route.method, path, json: "{}")
            #expect(response.status == 401 && response.code == "console_session_required", "\(route)")
        }
        #expect(fixture.upstream.calls.isEmpty)
    }
}

@Suite struct ConsoleProblemCodeTests {
    @Test func codesAreUniqueStableAndPrefixed() {
        let codes = ProblemCode.consoleCodes.map(\.rawValue)
        #expect(Set(codes).count == codes.count)
        #expect(codes.allSatisfy { $0.hasPrefix("console_") })
        #expect(codes == [
            "console_session_required", "console_csrf_invalid", "console_origin_refused", "console_role_insufficient", "console_not_an_operator",
            "console_enrolment_refused", "console_user_verification_required", "console_credential_inactive",
            "console_operators_policy_protected",
        ])
        #expect(ProblemCode.consoleSessionRequired.status == 401)
        #expect(ProblemCode.consoleOperatorsPolicyProtected.status == 409)
        // The preview's refusal is the oob service's code for the same template.
        #expect(ProblemCode.invalidTemplate.rawValue == "invalid_template" && ProblemCode.invalidTemplate.status == 400)
        #expect(ProblemCode.consoleCodes.dropFirst().dropLast().allSatisfy { $0.status == 403 })
    }
}
