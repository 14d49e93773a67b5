import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// A tenant's UAF settings (facets, policy), apps and message templates through the console,
/// and the template preview.
@Suite struct ConsoleTenantSettingsTests {
    static let template = #"{"emailSubject":"{{tenant}} code","emailText":"Code {{code}}, valid {{minutes}} min.","emailHTML":"<p>{{code}}</p>","smsText":"{{code}} is your code"}"#

    /// (method, console path, body, least role, service, service path)
    static let routes: [(String, String, String?, OperatorRole, ServiceName, String)] = [
        ("GET", "/console/api/tenants/acme/uaf-settings", nil, .viewer, .registration, "/v1/admin/tenants/acme/uaf-settings"),
        ("PUT", "/console/api/tenants/acme/uaf-settings", #"{"facetIds":["https://acme.example"]}"#, .administrator, .registration,
         "/v1/admin/tenants/acme/uaf-settings"),
        ("GET", "/console/api/tenants/acme/app-settings", nil, .viewer, .oob, "/v1/admin/tenants/acme/app-settings"),
        ("PUT", "/console/api/tenants/acme/app-settings", #"{"domains":["acme.example"],"iosAppIds":[],"androidApps":[]}"#, .administrator, .oob,
         "/v1/admin/tenants/acme/app-settings"),
        ("DELETE", "/console/api/tenants/acme/app-settings", nil, .administrator, .oob, "/v1/admin/tenants/acme/app-settings"),
        ("GET", "/console/api/tenants/acme/templates/otp/fr-CA", nil, .viewer, .oob, "/v1/admin/tenants/acme/templates/otp/fr-CA"),
        ("PUT", "/console/api/tenants/acme/templates/transaction_otp/en", template, .administrator, .oob, "/v1/admin/tenants/acme/templates/transaction_otp/en"),
        ("DELETE", "/console/api/tenants/acme/templates/otp/de", nil, .administrator, .oob, "/v1/admin/tenants/acme/templates/otp/de"),
    ]

    @Test(arguments: [("vera", OperatorRole.viewer), ("otto", .operator), ("ada", .administrator)])
    func eachRouteForwardsForItsRolesOnly(_ username: String, _ role: OperatorRole) async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn(username)
        for (method, path, body, least, service, servicePath) in Self.routes {
            let before = fixture.upstream.calls.count
            let response = await fixture.send(method, path, json: body, cookie: cookie, csrf: csrf)
            if role >= least {
                #expect(response.status == 200, "\(username) \(method) \(path)")
                let call = try #require(fixture.upstream.calls.last)
                #expect(call.service == service && call.method == method && call.path == servicePath && call.credential == .admin, "\(call)")
                if let body { #expect(try JSONParser.parse(Array(call.body!.utf8)) == JSONParser.parse(Array(body.utf8))) } else { #expect(call.body == nil) }
            } else {
                #expect(response.status == 403 && response.code == "console_role_insufficient", "\(username) \(method) \(path)")
                #expect(fixture.upstream.calls.count == before)
            }
        }
    }

    /// The service's refusal comes back as it is: status, code and field.
    @Test func aServicesRefusalIsPassedOn() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada") { call in
            call.service == .oob
                ? FakeUpstream.json(#"{"type":"about:blank","title":"Domain taken","status":409,"code":"app_domain_taken","field":"domains"}"#, status: 409)
                : FakeUpstream.json("{}")
        }
        let response = await fixture.send(
            "PUT", "/console/api/tenants/acme/app-settings", json: #"{"domains":["bank.example"],"iosAppIds":[],"androidApps":[]}"#, cookie: cookie,
            csrf: csrf)
        #expect(response.status == 409 && response.code == "app_domain_taken")
        #expect((try JSONParser.parse(response.body))["field"]?.stringValue == "domains")
    }

    @Test func badKindsLocalesAndBodiesNeverReachAService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("ada")
        let kind = await fixture.send("GET", "/console/api/tenants/acme/templates/password_reset/en", cookie: cookie, csrf: nil)
        #expect(kind.status == 404 && kind.code == "not_found")
        for locale in ["e", "en%3Fx", "fr_CA", "d%C3%A9", String(repeating: "a", count: 17)] {
            let response = await fixture.send("GET", "/console/api/tenants/acme/templates/otp/\(locale)", cookie: cookie, csrf: nil)
            #expect(response.status == 400 && response.code == "invalid_field", "\(locale)")
        }
        let missing = await fixture.send("PUT", "/console/api/tenants/acme/templates/otp/en", json: #"{"emailSubject":"x"}"#, cookie: cookie, csrf: csrf)
        #expect(missing.status == 400 && missing.code == "invalid_field")
        let notJSON = await fixture.send("PUT", "/console/api/tenants/acme/app-settings", json: #"{"domains":["a"],"domains":["b"]}"#, cookie: cookie, csrf: csrf)
        #expect(notJSON.status == 400 && notJSON.code == "malformed_json")
        #expect(fixture.upstream.calls.count == 1)  // the sign-in
    }

    @Test func thePreviewRendersTheEditorsTextWithSampleValuesAndCallsNoService() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("vera")
        let response = await fixture.send("POST", "/console/api/tenants/acme/templates/otp/fr-CA/preview", json: Self.template, cookie: cookie, csrf: csrf)
        #expect(response.status == 200)
        let preview = try JSONValueDecoder().decode(TemplatePreview.self, from: response.body)
        #expect(preview == TemplatePreview(
            locale: "fr-ca", emailSubject: "acme code", emailText: "Code 123456, valid 5 min.", emailHTML: "<p>123456</p>",
            smsText: "123456 is your code", smsCharacters: 19))
        #expect(response.header("Cache-Control") == "no-store")
        #expect(fixture.upstream.calls.count == 1)
    }

    @Test func aTransactionTemplatePreviewShowsTheAmountAndPayee() async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("vera")
        let body = #"{"emailSubject":"Confirm","emailText":"{{amount}} to {{payee}}: {{code}}","smsText":"{{amount}} {{payee}} {{code}}"}"#
        let response = await fixture.send("POST", "/console/api/tenants/acme/templates/transaction_otp/en/preview", json: body, cookie: cookie, csrf: csrf)
        let preview = try JSONValueDecoder().decode(TemplatePreview.self, from: response.body)
        #expect(preview.emailText == "1,250.00 EUR to Example Payee Ltd: 123456" && preview.emailHTML == nil)
    }

    /// What the oob service would refuse on save, the preview refuses with the same code.
    @Test(arguments: [
        (#"{"emailSubject":"x","emailText":"{{code","smsText":"x"}"#, "invalid_template"),
        (#"{"emailSubject":"x","emailText":"{{password}}","smsText":"x"}"#, "invalid_template"),
        (#"{"emailSubject":"a\nBcc: x@evil.example","emailText":"x","smsText":"x"}"#, "invalid_template"),
        (#"{"emailSubject":"x","emailText":"x","smsText":""}"#, "invalid_field"),
    ])
    func aTemplateTheDeliveryLibraryRefusesIsRefused(_ body: String, _ code: String) async throws {
        let (fixture, cookie, csrf) = try await ConsoleFixture.signedIn("vera")
        let response = await fixture.send("POST", "/console/api/tenants/acme/templates/otp/en/preview", json: body, cookie: cookie, csrf: csrf)
        #expect(response.status == 400 && response.code == code, "\(body)")
    }

    /// The preview is a POST: like every state-changing method it needs the CSRF token.
    @Test func thePreviewNeedsTheCSRFToken() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera")
        let response = await fixture.send("POST", "/console/api/tenants/acme/templates/otp/en/preview", json: Self.template, cookie: cookie, csrf: nil)
        #expect(response.status == 403 && response.code == "console_csrf_invalid")
    }
}
