import Testing
@testable import HTTPServer

@Suite struct RouterTests {
    func router() -> Router {
        var r = Router()
        r.get("/v1/tenants/{tenant}") { _, _ in HTTPResponse(status: 200) }
        r.put("/v1/admin/tenants/{tenant}") { _, _ in HTTPResponse(status: 200) }
        r.delete("/v1/admin/tenants/{tenant}/api-keys/{keyId}") { _, _ in HTTPResponse(status: 204) }
        return r
    }

    @Test func matchesTemplatesAndExtractsParameters() {
        guard case .found(_, let template, let params) = router().match(method: "DELETE", path: "/v1/admin/tenants/acme/api-keys/k_1") else {
            Issue.record("no match")
            return
        }
        #expect(template == "/v1/admin/tenants/{tenant}/api-keys/{keyId}")
        #expect(params == ["tenant": "acme", "keyId": "k_1"])
    }

    @Test func wrongMethodIsMethodNotAllowedWithAllow() {
        guard case .methodNotAllowed(_, let allowed) = router().match(method: "POST", path: "/v1/tenants/acme") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET"])
    }

    @Test(arguments: ["/", "/v1", "/v1/tenants", "/v1/tenants/a/b", "/v2/tenants/a"])
    func unknownPathsAreNotFound(_ path: String) {
        guard case .notFound = router().match(method: "GET", path: path) else {
            Issue.record("expected not found for \(path)")
            return
        }
    }

    @Test func overlongParametersDoNotMatch() {
        guard case .notFound = router().match(method: "GET", path: "/v1/tenants/" + String(repeating: "a", count: 300)) else {
            Issue.record("expected not found")
            return
        }
    }

    @Test func headIsServedByGet() {
        guard case .found = router().match(method: "HEAD", path: "/v1/tenants/a") else {
            Issue.record("expected HEAD to match GET")
            return
        }
    }
}
