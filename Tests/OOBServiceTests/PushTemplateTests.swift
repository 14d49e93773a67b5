import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// Approval push text: the parser and renderer of push templates, and in process over a
/// scratch database the admin API's `push` kind, the text an approval's push carries (template
/// in the approval's locale chain, or the RP's own text), and `text` refused unless the tenant
/// allows dynamic text.
struct PushTemplateTests {
    @Test func aTemplateRendersActionResourceAndLevelInOnePass() throws {
        let t = try PushTemplate("Approve {{action}} on {{resource}} ({{level}})?")
        #expect(t.render(action: "login", resource: "web", level: "ENTRY") == "Approve login on web (ENTRY)?")
        // A value holding a placeholder is inserted literally.
        #expect(t.render(action: "{{level}}", resource: "x", level: "E") == "Approve {{level}} on x (E)?")
        #expect(try PushTemplate("No placeholder").render(action: "a", resource: "r", level: "l") == "No placeholder")
    }

    @Test(arguments: ["", "Open {{action", "Hi {{username}}", "Hi {{code}}", "line\nbreak", String(repeating: "x", count: 513)])
    func aBadTemplateIsRefusedWithInvalidTemplate(_ text: String) {
        #expect(throws: HTTPError.self) { try PushTemplate(text) }
        do {
            _ = try PushTemplate(text)
        } catch let error as HTTPError {
            #expect(error.code == .invalidTemplate)
        } catch { Issue.record("\(error)") }
    }

    @Test func theLocaleFallsBackToItsLanguageThenEnglish() {
        #expect(PushTemplate.fallbackChain("fr-CA") == ["fr-CA", "fr", "en"])
        #expect(PushTemplate.fallbackChain("de") == ["de", "en"])
        #expect(PushTemplate.fallbackChain(nil) == ["en"])
        #expect(PushTemplate.fallbackChain("en") == ["en"])
        #expect(PushTemplate.isLocale("fr-CA") && !PushTemplate.isLocale("f") && !PushTemplate.isLocale("fr_CA") && !PushTemplate.isLocale("fr;x"))
    }
}

@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct PushTemplateAdminTests {
    static let admin = ServiceHarness<OOBService>.adminToken

    func putPush(_ f: OOBFixture, _ locale: String, _ text: String) async -> HTTPResponse {
        await f.h.send("PUT", "/v1/admin/tenants/acme/templates/push/\(locale)", bearer: Self.admin, json: #"{"text":"\#(text)"}"#)
    }

    /// The push text the delivery worker would send for `approvalId`.
    func pushText(_ f: OOBFixture, _ approvalId: String, device: String? = nil) async throws -> String {
        try await f.h.context.pool.withConnection { conn in
            let approval = try #require(try await StoredApproval.load(approvalId, tenant: "acme", on: conn))
            return try await PushTemplate.displayText(approval, deviceId: device, on: conn)
        }
    }

    @Test func theApprovalsPushTextComesFromTheTemplateOfItsLocale() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        _ = try await f.enrol(phone, as: "alice")
        #expect(await putPush(f, "fr", "Approuver {{action}} sur {{resource}} ?").status == 200)
        #expect(await putPush(f, "en", "Approve {{action}} on {{resource}} at {{level}}?").status == 200)
        let read = await f.h.send("GET", "/v1/admin/tenants/acme/templates/push/fr", bearer: Self.admin)
        #expect(read.status == 200 && read.text.contains("Approuver"), "\(read.text)")
        // A bad push template is refused with its code; an e-mail document is not a push one.
        #expect(await putPush(f, "de", "Hallo {{username}}").code == "invalid_template")
        #expect(await putPush(f, "de", "Offen {{action").code == "invalid_template")
        // The e-mail/SMS templates still load beside a push one.
        let otp = await f.h.send(
            "PUT", "/v1/admin/tenants/acme/templates/otp/fr", bearer: Self.admin,
            json: #"{"emailSubject":"Code","emailText":"Code {{code}}","smsText":"Code {{code}}"}"#)
        #expect(otp.status == 200, "\(otp.text)")
        _ = try await f.h.context.pool.withConnection { try await TemplateStore.templates(for: "acme", on: $0) }

        func ask(_ extra: String) async throws -> String {
            let r = await f.rp("POST", "/v1/tenants/acme/approvals", json: #"{"username":"alice","level":"ENTRY","action":"login","resource":"web"\#(extra)}"#)
            try #require(r.status == 201, "\(r.text)")
            return try #require(r.object()["approvalId"] as? String)
        }
        #expect(try await pushText(f, try await ask(#","locale":"fr-CA""#)) == "Approuver login sur web ?")
        #expect(try await pushText(f, try await ask(#","locale":"fr""#)) == "Approuver login sur web ?")
        #expect(try await pushText(f, try await ask(#","locale":"de""#)) == "Approve login on web at ENTRY?")
        #expect(try await pushText(f, try await ask("")) == "Approve login on web at ENTRY?")
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals", json: #"{"username":"alice","level":"ENTRY","action":"a","resource":"r","locale":"fr_CA"}"#).code == "invalid_field")
        // No locale in the request: the device's (from its create/update request).
        let device = try await f.enrol(try SoftwareDevice(), as: "bob")
        let french = try SoftwareDevice()
        let frenchId = try await f.enrol(french, as: "carol")
        let updated = try await f.device(french, "POST", "/v1/tenants/acme/devices", json: try french.upsertBody(locale: "fr-CA"))
        #expect(updated.status == 200, "\(updated.text)")
        #expect(try await f.device(french, "POST", "/v1/tenants/acme/devices", json: try french.upsertBody(locale: "fr_CA")).code == "invalid_field")
        let r = await f.rp("POST", "/v1/tenants/acme/approvals", json: #"{"username":"carol","level":"ENTRY","action":"login","resource":"web"}"#)
        let carols = try #require(r.object()["approvalId"] as? String, "\(r.text)")
        #expect(try await pushText(f, carols, device: frenchId) == "Approuver login sur web ?")
        #expect(try await pushText(f, carols, device: device) == "Approve login on web at ENTRY?")
        let asked = await f.rp("POST", "/v1/tenants/acme/approvals", json: #"{"username":"carol","level":"ENTRY","action":"login","resource":"web","locale":"en"}"#)
        #expect(try await pushText(f, try #require(asked.object()["approvalId"] as? String), device: frenchId) == "Approve login on web at ENTRY?")
        // Without templates: the built-in text.
        #expect(await f.h.send("DELETE", "/v1/admin/tenants/acme/templates/push/en", bearer: Self.admin).status == 204)
        #expect(try await pushText(f, try await ask(#","locale":"de""#)) == PushTemplate.builtIn)
    }

    @Test func dynamicTextIsRefusedUnlessTheTenantAllowsIt() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        _ = try await f.enrol(phone, as: "alice")
        let body = #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","text":"Sign in to Acme?"}"#
        // No app settings, then settings without the flag, then false: refused.
        let none = await f.rp("POST", "/v1/tenants/acme/approvals", json: body)
        #expect(none.status == 403 && none.code == "dynamic_text_not_allowed", "\(none.text)")
        try await f.allowDynamicText(false)
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals", json: body).code == "dynamic_text_not_allowed")
        // Allowed: the RP's text is the push text, whatever the templates say.
        try await f.allowDynamicText()
        #expect(await putPush(f, "en", "Template {{action}}").status == 200)
        let r = await f.rp("POST", "/v1/tenants/acme/approvals", json: body)
        try #require(r.status == 201, "\(r.text)")
        #expect(try await pushText(f, try #require(r.object()["approvalId"] as? String)) == "Sign in to Acme?")
        // Signet's own callers (sign-in, transaction) are not the RP's free text.
        try await f.allowDynamicText(false)
        let internalCall = await f.h.send(
            "POST", "/v1/internal/tenants/acme/approvals", bearer: ServiceHarness<OOBService>.internalToken,
            headers: [("X-Signet-Service", "authentication")], json: body)
        #expect(internalCall.status == 201, "\(String(decoding: internalCall.body, as: UTF8.self))")
    }
}
