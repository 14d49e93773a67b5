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

/// The byte-level matcher that plain paths take (printable ASCII without `%`: every ordinary
/// request) answers as the general matcher, which splits and decodes first, for every path of
/// a generated set over a router whose templates overlap, share prefixes and methods.
@Suite struct RouterMatcherEquivalenceTests {
    func router() -> Router {
        var r = Router()
        let ok: Handler = { _, _ in HTTPResponse(status: 200) }
        r.get("/", ok)
        r.get("/healthz", ok)
        r.get("/v1/tenants/{tenant}", ok)
        r.put("/v1/tenants/{tenant}", ok)
        r.get("/v1/tenants/{tenant}/users/{username}", ok)
        r.delete("/v1/tenants/{tenant}/users/{username}", ok)
        r.post("/v1/tenants/{tenant}/users/me", ok)
        r.get("/v1/{a}/{b}/{c}", ok)
        r.patch("/v1/tenants/acme", ok)
        r.get("/a/b", ok)
        r.post("/a/{x}", ok)
        return r
    }

    /// A comparable form of a resolution.
    func describe(_ r: Router.Resolution) -> String {
        switch r {
        case .found(let index, let parameters): "found \(index) \(parameters.sorted { $0.key < $1.key })"
        case .methodNotAllowed(let index, let allowed): "405 \(index) \(allowed)"
        case .notFound: "404"
        case .invalidPath(let reason): "400 \(reason)"
        }
    }

    @Test func plainPathsMatchAsDecodedOnes() {
        let r = router()
        // Segments, joined by "/": the routes' literals, values, dot segments, an empty one
        // (doubled or trailing slashes) and one over the parameter bound.
        let pieces = ["v1", "tenants", "acme", "users", "me", "a", "b", ".", "..", "x.y", "healthz", "", String(repeating: "p", count: 257)]
        let methods = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "get"]
        var state: UInt64 = 0x5EED_0009
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        var compared = 0
        var found = 0
        var refused = 0
        for _ in 0..<20_000 {
            let path = "/" + (0..<next(7)).map { _ in pieces[next(pieces.count)] }.joined(separator: "/")
            let method = methods[next(methods.count)]
            let plain = path.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }
            #expect(plain)
            let fast = describe(r.resolve(method: method, path: path))
            let general = describe(r.resolveDecoding(method: method, path: path))
            #expect(fast == general, "\(method) \(path)")
            compared += 1
            if fast.hasPrefix("found") { found += 1 }
            if fast.hasPrefix("400") { refused += 1 }
        }
        // The set reaches every outcome, so the comparison is not only of misses.
        #expect(compared == 20_000 && found > 200 && refused > 20, "found \(found), refused \(refused)")
    }

    @Test func capturedParametersAreExact() {
        guard case .found(let index, let parameters) = router().resolve(method: "GET", path: "/v1/tenants/acme/users/bob") else {
            Issue.record("no match")
            return
        }
        #expect(router().route(at: index).template == "/v1/tenants/{tenant}/users/{username}")
        #expect(parameters == ["tenant": "acme", "username": "bob"])
        guard case .found(_, let none) = router().resolve(method: "GET", path: "/healthz") else {
            Issue.record("no match")
            return
        }
        #expect(none.isEmpty)
        // A literal beats a later parameter route only by registration order, as before.
        guard case .found(let me, _) = router().resolve(method: "POST", path: "/v1/tenants/acme/users/me") else {
            Issue.record("no match")
            return
        }
        #expect(router().route(at: me).template == "/v1/tenants/{tenant}/users/me")
    }
}
