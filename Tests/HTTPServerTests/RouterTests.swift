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

/// Paths are matched exactly as sent: percent-decoded segment by segment after splitting,
/// refused when a segment cannot be a name, and never normalised (a trailing slash is another
/// path, as the gateway sees it).
@Suite struct RouterPathTests {
    func router() -> Router {
        var r = Router()
        r.get("/metrics") { _, _ in HTTPResponse(status: 200) }
        r.get("/v1/tenants/{tenant}") { _, _ in HTTPResponse(status: 200) }
        r.get("/v1/tenants/{tenant}/users/{username}") { _, _ in HTTPResponse(status: 200) }
        return r
    }

    @Test(arguments: ["/metrics/", "//metrics", "/metrics//", "/v1/tenants/acme/", "/v1//tenants/acme", "/v1/tenants/acme/users/bob/"])
    func trailingAndDoubledSlashesAreNotFound(_ path: String) {
        guard case .notFound = router().match(method: "GET", path: path) else {
            Issue.record("expected not found for \(path)")
            return
        }
    }

    @Test func parametersArePercentDecodedAfterSplitting() {
        guard case .found(_, _, let params) = router().match(method: "GET", path: "/v1/tenants/a%2Db/users/al%C3%A9%20x") else {
            Issue.record("no match")
            return
        }
        #expect(params == ["tenant": "a-b", "username": "alé x"])
        // Literals are compared decoded too, as the gateway compares them.
        guard case .found(_, let template, _) = router().match(method: "GET", path: "/%6Detrics") else {
            Issue.record("no match for an encoded literal")
            return
        }
        #expect(template == "/metrics")
    }

    @Test(arguments: [
        "/v1/tenants/a%00b",  // NUL: would truncate the parameter in C strings
        "/v1/tenants/a%0Ab", "/v1/tenants/a%0db", "/v1/tenants/a%1Fb", "/v1/tenants/a%7Fb",  // C0 and DEL
        "/v1/tenants/a%C2%80b", "/v1/tenants/a%C2%9Fb",  // C1 controls
        "/v1/tenants/a%FFb", "/v1/tenants/a%C3", "/v1/tenants/a%ED%A0%80",  // invalid UTF-8 (a lone surrogate too)
        "/v1/tenants/a%2Fb", "/v1/tenants/a%2fb",  // an encoded slash inside a segment
        "/v1/tenants/a%zzb", "/v1/tenants/a%4", "/v1/tenants/%",  // broken escapes
        "/v1/tenants/acme/users/%2E%2E", "/v1/tenants/acme/users/.",  // dot segments as values
        "/v1/tenants/acme/users/bob%00.admin",
    ])
    func unusableSegmentsAreInvalidPath(_ path: String) {
        guard case .invalidPath = router().match(method: "GET", path: path) else {
            Issue.record("expected invalid path for \(path)")
            return
        }
    }
}
