import Foundation
import Schema
import Testing
import TestSupport

/// Bad input anywhere gets a clear problem+json error with a stable code.
@Suite(.enabled(if: TestStack.enabled), .serialized)
struct BadInputTests {
    func expectProblem(_ r: TestHTTP.Response, _ status: Int, _ code: String, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(r.status == status, sourceLocation: sourceLocation)
        #expect(r.headers["content-type"] == "application/problem+json", sourceLocation: sourceLocation)
        let body = try r.json()
        #expect(body["code"] as? String == code, sourceLocation: sourceLocation)
        #expect(body["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect(body["requestId"] as? String != nil, sourceLocation: sourceLocation)
        if let field { #expect(body["field"] as? String == field, sourceLocation: sourceLocation) }
    }

    @Test func adminAPIRefusesBadTokensAndBodies() async throws {
        try TestStack.require()
        let url = "\(Stack.registration)/v1/admin/tenants/\(Stack.newTenantID("bad"))"
        let good = #"{"displayName":"A","rpId":"example.com","origins":["https://example.com"]}"#
        try expectProblem(try await TestHTTP.json("PUT", url, json: good), 401, "unauthorized")
        try expectProblem(try await TestHTTP.json("PUT", url, token: "wrong", json: good), 401, "unauthorized")
        let t = TestStack.adminToken
        try expectProblem(try await TestHTTP.json("PUT", url, token: t, json: #"{"displayName":"A","#), 400, "malformed_json")
        try expectProblem(try await TestHTTP.json("PUT", url, token: t, json: #"{"rpId":"example.com","origins":[]}"#), 400, "invalid_field", field: "displayName")
        try expectProblem(try await TestHTTP.json("PUT", url, token: t, json: #"{"displayName":"A","rpId":"example.com","origins":"x"}"#), 400, "invalid_field", field: "origins")
        try expectProblem(try await TestHTTP.json("PUT", url, token: t, json: #"{"displayName":"A","rpId":"https://x","origins":["https://x.com"]}"#), 400, "invalid_field", field: "rpId")
        try expectProblem(
            try await TestHTTP.send("PUT", url, headers: ["Authorization": "Bearer \(t)", "Content-Type": "text/plain"], body: Array(good.utf8)),
            415, "unsupported_media_type")
        let huge = #"{"displayName":""# + String(repeating: "x", count: 200_000) + #"","rpId":"a.com","origins":["https://a.com"]}"#
        try expectProblem(try await TestHTTP.json("PUT", url, token: t, json: huge), 413, "payload_too_large")
        try expectProblem(try await TestHTTP.json("PUT", "\(Stack.registration)/v1/admin/tenants/Not_Valid", token: t, json: good), 400, "invalid_field", field: "tenant")
        // Nothing was created by any of these.
        try expectProblem(try await TestHTTP.send("GET", url.replacingOccurrences(of: "/admin", with: "")), 404, "tenant_not_found")
    }

    @Test func everyServiceAnswersUnknownThingsWithProblems() async throws {
        try TestStack.require()
        for service in ServiceName.allCases {
            let base = Stack.url(service)
            try expectProblem(try await TestHTTP.send("GET", "\(base)/v1/tenants/no-such-tenant"), 404, "tenant_not_found")
            try expectProblem(try await TestHTTP.send("GET", "\(base)/nowhere"), 404, "not_found")
            try expectProblem(try await TestHTTP.send("DELETE", "\(base)/v1/tenants/demo"), 405, "method_not_allowed")
            let ready = try await TestHTTP.send("GET", "\(base)/readyz")
            #expect(ready.status == 200)
            #expect(try ready.json()["checks"] as? [String: String] == ["postgres": "ok", "kafka": "ok", "consumers": "ok"])
            let metrics = try await TestHTTP.send("GET", "\(base)/metrics")
            #expect(metrics.text.contains("signet_http_requests_total{method=\"GET\",route=\"/v1/tenants/{tenant}\",status=\"404\"}"))
            #expect(metrics.text.contains("signet_http_request_duration_seconds_bucket"))
            #expect(metrics.text.contains("signet_outbox_backlog{service=\"\(service.rawValue)\"}"))
            if service != .registration { #expect(metrics.text.contains("signet_kafka_consumer_lag")) }
        }
    }

    @Test func apiKeysAuthenticateTheirTenantOnlyUntilRevoked() async throws {
        try TestStack.require()
        let id = Stack.newTenantID("keys")
        #expect(try await Stack.putTenant(id).status == 201)
        let other = Stack.newTenantID("keys")
        #expect(try await Stack.putTenant(other).status == 201)
        let issued = try await TestHTTP.send("POST", "\(Stack.registration)/v1/admin/tenants/\(id)/api-keys", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        #expect(issued.status == 201)
        #expect(issued.headers["cache-control"] == "no-store")
        let key = try #require(try issued.json()["apiKey"] as? String)
        let keyID = try #require(try issued.json()["keyId"] as? String)
        let current = "\(Stack.registration)/v1/tenants/\(id)/api-keys/current"
        #expect(try await TestHTTP.send("GET", current, headers: ["Authorization": "Bearer \(key)"]).status == 200)
        // Another tenant's path, a tampered key, no key: all the same 401.
        try expectProblem(try await TestHTTP.send("GET", "\(Stack.registration)/v1/tenants/\(other)/api-keys/current", headers: ["Authorization": "Bearer \(key)"]), 401, "unauthorized")
        // (The last character changed for another: a fixed replacement would leave one key in
        // sixteen unchanged, since the last base64url character of 32 bytes has 16 values.)
        let tampered = "\(key.dropLast())\(key.last == "A" ? "B" : "A")"
        try expectProblem(try await TestHTTP.send("GET", current, headers: ["Authorization": "Bearer \(tampered)"]), 401, "unauthorized")
        try expectProblem(try await TestHTTP.send("GET", current), 401, "unauthorized")
        // Revocation.
        let revoke = "\(Stack.registration)/v1/admin/tenants/\(id)/api-keys/\(keyID)"
        #expect(try await TestHTTP.send("DELETE", revoke, headers: ["Authorization": "Bearer \(TestStack.adminToken)"]).status == 204)
        try expectProblem(try await TestHTTP.send("DELETE", revoke, headers: ["Authorization": "Bearer \(TestStack.adminToken)"]), 404, "not_found")
        try expectProblem(try await TestHTTP.send("GET", current, headers: ["Authorization": "Bearer \(key)"]), 401, "unauthorized")
        // The key's hash (never the key) reached the other services, and so did its revocation.
        let auth = TestStack.pool(database: "signet_authentication", size: 1)
        defer { auth.close() }
        let revokedEverywhere = await TestStack.eventually {
            let rows = try? await auth.withConnection { try await $0.query("SELECT key_hash, revoked_at FROM tenant_api_keys WHERE key_id = \(keyID)") }
            return rows?.first?.string("revoked_at") != nil
        }
        #expect(revokedEverywhere)
        // Imported keys: the demo tenant's key from the local stack works.
        let demo = try await TestHTTP.send(
            "GET", "\(Stack.registration)/v1/tenants/demo/api-keys/current",
            headers: ["Authorization": "Bearer \(TestStack.environment["SIGNET_DEMO_RP_API_KEY"] ?? "dev-demo-rp-key")"])
        #expect(demo.status == 200)
        #expect(try demo.json()["keyId"] as? String == "k_00000000000000de")
        let importURL = "\(Stack.registration)/v1/admin/tenants/\(id)/api-keys/k_0123456789abcdef"
        let imported = "imported-key-\(UUID().uuidString)"
        #expect(try await TestHTTP.json("PUT", importURL, token: TestStack.adminToken, json: #"{"apiKey":"\#(imported)"}"#).status == 201)
        #expect(try await TestHTTP.json("PUT", importURL, token: TestStack.adminToken, json: #"{"apiKey":"\#(imported)"}"#).status == 200)
        try expectProblem(try await TestHTTP.json("PUT", importURL, token: TestStack.adminToken, json: #"{"apiKey":"another-key-\#(UUID().uuidString)"}"#), 409, "conflict")
        try expectProblem(try await TestHTTP.json("PUT", importURL, token: TestStack.adminToken, json: #"{"apiKey":"short"}"#), 400, "invalid_field", field: "apiKey")
        #expect(try await TestHTTP.send("GET", current.replacingOccurrences(of: id, with: id), headers: ["Authorization": "Bearer \(imported)"]).status == 200)
        let unknownTenant = try await TestHTTP.send("POST", "\(Stack.registration)/v1/admin/tenants/no-such-tenant/api-keys", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        try expectProblem(unknownTenant, 404, "tenant_not_found")
    }
}
