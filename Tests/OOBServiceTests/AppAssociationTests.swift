import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// A tenant's app settings (admin API) and the app association files served for its domains
/// by `Host`, and the QR defaults they carry (default type, web URL), in process over a
/// scratch database.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct AppAssociationTests {
    static let admin = ServiceHarness<OOBService>.adminToken
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let settings = """
        {"domains":["bank.example","www.bank.example"],"iosAppIds":["ABCDE12345.com.bank.app"],
         "androidApps":[{"packageName":"com.bank.app","sha256CertFingerprints":["\(fingerprint)"]}]}
        """

    func put(_ f: OOBFixture, _ body: String, tenant: String = "acme") async -> HTTPResponse {
        await f.h.send("PUT", "/v1/admin/tenants/\(tenant)/app-settings", bearer: Self.admin, json: body)
    }

    func file(_ f: OOBFixture, _ name: String, host: String) async -> HTTPResponse {
        await f.h.send("GET", "/.well-known/\(name)", headers: [("Host", host)])
    }

    @Test func theTenantsDomainsServeItsAppsFiles() async throws {
        let f = try await OOBFixture.make(origins: ["https://bank.example", "http://localhost:8080"])
        defer { Task { await f.h.close() } }
        let stored = await put(f, Self.settings)
        #expect(stored.status == 200, "\(stored.text)")
        let read = await f.h.send("GET", "/v1/admin/tenants/acme/app-settings", bearer: Self.admin)
        #expect(read.status == 200 && (read.object()["domains"] as? [String]) == ["bank.example", "www.bank.example"], "\(read.text)")

        // Apple: webcredentials and applinks for the app, paths matching the QR payloads.
        for host in ["bank.example", "BANK.example:443", "www.bank.example"] {
            let apple = await file(f, "apple-app-site-association", host: host)
            #expect(apple.status == 200 && apple.header("content-type") == "application/json", "\(host): \(apple.text)")
            let o = apple.object()
            #expect(((o["webcredentials"] as? [String: Any])?["apps"] as? [String]) == ["ABCDE12345.com.bank.app"])
            let details = try #require(((o["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first)
            #expect(details["appIDs"] as? [String] == ["ABCDE12345.com.bank.app"])
            #expect((details["components"] as? [[String: Any]])?.first?["/"] as? String == "*/qr/qr_*")
        }
        // Android: both relations for the package and its certificate.
        let android = await file(f, "assetlinks.json", host: "bank.example")
        #expect(android.status == 200 && android.header("content-type") == "application/json")
        let statements = try #require((try? JSONSerialization.jsonObject(with: Data(android.body))) as? [[String: Any]])
        #expect(statements.count == 1)
        #expect(statements[0]["relation"] as? [String] == ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"])
        let target = try #require(statements[0]["target"] as? [String: Any])
        #expect(target["namespace"] as? String == "android_app" && target["package_name"] as? String == "com.bank.app")
        #expect(target["sha256_cert_fingerprints"] as? [String] == [Self.fingerprint])

        // Another host, no host, an IP literal: nobody's.
        for host in ["other.example", "bank.example.evil", "127.0.0.1", "bank.example:x", ""] {
            let r = await file(f, "apple-app-site-association", host: host)
            #expect(r.status == 404 && r.code == "app_association_not_found", "\(host): \(r.status) \(r.text)")
        }
        // A tenant without Android apps has no assetlinks file.
        #expect(await put(f, #"{"domains":["bank.example"],"iosAppIds":["ABCDE12345.com.bank.app"],"androidApps":[]}"#).status == 200)
        #expect(await file(f, "assetlinks.json", host: "bank.example").code == "app_association_not_found")
        // The domains follow the settings: www. is no longer the tenant's.
        #expect(await file(f, "apple-app-site-association", host: "www.bank.example").code == "app_association_not_found")

        // Removed: nothing served, nothing to read.
        #expect(await f.h.send("DELETE", "/v1/admin/tenants/acme/app-settings", bearer: Self.admin).status == 204)
        #expect(await file(f, "apple-app-site-association", host: "bank.example").code == "app_association_not_found")
        #expect(await f.h.send("GET", "/v1/admin/tenants/acme/app-settings", bearer: Self.admin).code == "app_settings_not_found")
        #expect(await f.h.send("DELETE", "/v1/admin/tenants/acme/app-settings", bearer: Self.admin).code == "app_settings_not_found")
    }

    @Test func aDomainBelongsToOneTenant() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        try await f.h.seedTenant("other", apiKey: "sk_other_0123456789abcdefghijklmnopqrstuv")
        #expect(await put(f, Self.settings).status == 200)
        let taken = await put(f, #"{"domains":["www.bank.example"],"iosAppIds":["ZZZZZ99999.com.evil.app"],"androidApps":[]}"#, tenant: "other")
        #expect(taken.status == 409 && taken.code == "app_domain_taken" && taken.object()["field"] as? String == "domains", "\(taken.text)")
        // Nothing of the refused settings was kept: the first tenant still answers.
        let apple = await file(f, "apple-app-site-association", host: "www.bank.example")
        #expect(apple.text.contains("ABCDE12345.com.bank.app") && !apple.text.contains("ZZZZZ99999"))
        #expect(await f.h.send("GET", "/v1/admin/tenants/other/app-settings", bearer: Self.admin).code == "app_settings_not_found")
        // An unknown tenant has none to set.
        #expect(await put(f, Self.settings, tenant: "nobody").code == "tenant_not_found")
        // The admin token only.
        #expect(await f.h.send("PUT", "/v1/admin/tenants/acme/app-settings", bearer: OOBFixture.key, json: Self.settings).status == 401)
    }

    static let refusals: [(body: String, field: String)] = [
        (#"{"domains":["Bank.example"],"iosAppIds":[],"androidApps":[]}"#, "domains"),
        (#"{"domains":["bank.example:8443"],"iosAppIds":[],"androidApps":[]}"#, "domains"),
        (#"{"domains":["https://bank.example"],"iosAppIds":[],"androidApps":[]}"#, "domains"),
        (#"{"domains":["a.example","a.example"],"iosAppIds":[],"androidApps":[]}"#, "domains"),
        (#"{"domains":["a1.example","a2.example","a3.example","a4.example","a5.example","a6.example","a7.example","a8.example","a9.example","a10.example","a11.example"],"iosAppIds":[],"androidApps":[]}"#, "domains"),
        (#"{"domains":[],"iosAppIds":["abcde12345.com.bank.app"],"androidApps":[]}"#, "iosAppIds"),
        (#"{"domains":[],"iosAppIds":["ABCDE1234.com.bank.app"],"androidApps":[]}"#, "iosAppIds"),
        (#"{"domains":[],"iosAppIds":["ABCDE12345.com..app"],"androidApps":[]}"#, "iosAppIds"),
        (#"{"domains":[],"iosAppIds":["ABCDE12345.com.bank/app"],"androidApps":[]}"#, "iosAppIds"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[{"packageName":"bankapp","sha256CertFingerprints":["\#(fingerprint)"]}]}"#, "androidApps"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[{"packageName":"com.1bank","sha256CertFingerprints":["\#(fingerprint)"]}]}"#, "androidApps"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[{"packageName":"com.bank","sha256CertFingerprints":[]}]}"#, "androidApps"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[{"packageName":"com.bank","sha256CertFingerprints":["\#(fingerprint.lowercased())"]}]}"#, "androidApps"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[{"packageName":"com.bank","sha256CertFingerprints":["\#(fingerprint.replacingOccurrences(of: ":", with: ""))"]}]}"#, "androidApps"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"defaultQrType":"qr"}"#, "defaultQrType"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"webUrl":"https://evil.example/signin"}"#, "webUrl"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"webUrl":"https://bank.example.evil/signin"}"#, "webUrl"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"webUrl":"https://bank.example/signin?next=x"}"#, "webUrl"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"webUrl":"https://bank.example/signin/"}"#, "webUrl"),
        (#"{"domains":[],"iosAppIds":[],"androidApps":[],"webUrl":"https://bank.example/a/../b"}"#, "webUrl"),
    ]

    @Test func badSettingsAreRefusedNamingTheField() async throws {
        let f = try await OOBFixture.make(origins: ["https://bank.example"])
        defer { Task { await f.h.close() } }
        for (body, field) in Self.refusals {
            let r = await put(f, body)
            #expect(r.status == 400 && r.code == "invalid_field" && r.object()["field"] as? String == field, "\(body): \(r.text)")
        }
        let missing = await put(f, #"{"domains":[],"iosAppIds":[]}"#)
        #expect(missing.code == "invalid_field" && missing.object()["field"] as? String == "androidApps", "\(missing.text)")
        #expect(await put(f, #"{"domains":[],"iosAppIds":[],"androidApps":[]"#).code == "malformed_json")
        #expect(await f.h.send("GET", "/v1/admin/tenants/acme/app-settings", bearer: Self.admin).code == "app_settings_not_found")
    }

    @Test func qrSessionsUseTheTenantsDefaultTypeAndWebURL() async throws {
        let f = try await OOBFixture.make(origins: ["https://bank.example", "http://localhost:8080"])
        defer { Task { await f.h.close() } }
        func create(_ body: String) async throws -> (type: String, payload: String, id: String) {
            let r = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: body)
            try #require(r.status == 201, "\(r.text)")
            let o = r.object()
            return (try #require(o["qrType"] as? String), try #require(o["qrPayload"] as? String), try #require(o["qrSessionId"] as? String))
        }
        // Without settings: the deployment's default, on the first https origin.
        let plain = try await create(#"{"purpose":"authenticate"}"#)
        #expect(plain.type == "universalLink" && plain.payload == "https://bank.example/qr/\(plain.id)")

        #expect(await put(f, #"{"domains":["bank.example"],"iosAppIds":[],"androidApps":[],"defaultQrType":"compact","webUrl":"https://bank.example/signin"}"#).status == 200)
        let compact = try await create(#"{"purpose":"authenticate"}"#)
        #expect(compact.type == "compact" && compact.payload == compact.id)
        let universal = try await create(#"{"purpose":"authenticate","qrType":"universalLink"}"#)
        #expect(universal.payload == "https://bank.example/signin/qr/\(universal.id)")
        // The request's webUrl wins, and must be on the tenant's origins too.
        let local = try await create(#"{"purpose":"authenticate","qrType":"universalLink","webUrl":"http://localhost:8080/demo"}"#)
        #expect(local.payload == "http://localhost:8080/demo/qr/\(local.id)")
        #expect(QRPayloadType.sessionId(in: local.payload) == local.id)
        let foreign = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: #"{"purpose":"authenticate","webUrl":"https://evil.example"}"#)
        #expect(foreign.status == 400 && foreign.object()["field"] as? String == "webUrl", "\(foreign.text)")
        let bad = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: #"{"purpose":"authenticate","qrType":"qr"}"#)
        #expect(bad.status == 400 && bad.object()["field"] as? String == "qrType")
    }
}
