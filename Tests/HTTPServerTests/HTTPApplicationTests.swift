import Foundation
import Platform
import Testing
@testable import HTTPServer

struct Body: Codable, Equatable {
    var name: String
    var count: Int
    var nested: Nested?
    struct Nested: Codable, Equatable { var items: [Int] }
}

func makeApplication() -> HTTPApplication {
    var r = Router()
    r.post("/v1/tenants/{tenant}/echo") { request, context in
        let body = try request.decode(Body.self)
        return try .json(["tenant": context.tenant ?? "", "name": body.name])
    }
    r.get("/boom") { _, _ in
        struct Secret: Error { let password = "hunter2" }
        throw Secret()
    }
    r.get("/teapot") { _, _ in throw HTTPError(ProblemCode("teapot", status: 418, title: "I'm a teapot"), detail: "short and stout") }
    // A service's own parameter rule (Signet's services check {tenant} with TenantValidation).
    let tenant = HTTPApplication.ParameterCheck(requirement: "lower-case letters and digits") { value in
        !value.isEmpty && value.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
    }
    return HTTPApplication(router: r, logger: Logger(label: "test", level: .critical), parameterChecks: ["tenant": tenant])
}

func problem(_ response: HTTPResponse) throws -> ProblemDetails {
    #expect(response.header("Content-Type") == "application/problem+json")
    return try JSONDecoder().decode(ProblemDetails.self, from: Data(response.body))
}

@Suite struct HTTPApplicationTests {
    let client = HTTPTestClient(makeApplication())

    @Test func decodesJSONAndUsesTheTenantFromThePath() async throws {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", json: #"{"name":"x","count":1}"#)
        #expect(r.status == 200)
        #expect(String(decoding: r.body, as: UTF8.self) == #"{"name":"x","tenant":"acme"}"#)
        #expect(r.header("X-Request-Id") != nil)
    }

    @Test func malformedJSONIs400MalformedJSON() async throws {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", json: #"{"name":"x","#)
        #expect(r.status == 400)
        #expect(try problem(r).code == "malformed_json")
    }

    /// One strict parser reads every body: what Foundation's two parsers would read two ways
    /// (a duplicate member: JSONDecoder keeps the first, JSONSerialization the last), or not
    /// at all, is malformed.
    @Test(arguments: [
        #"{"name":"alice","count":1,"name":"mallory"}"#,
        #"{"name":"x","count":1,"nested":{"items":[],"items":[1]}}"#,
        #"{"name":"a\ud800","count":1}"#,
        "{\"name\":\"x\",\"count\":1} trailing",
        String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
    ])
    func bodiesTwoParsersWouldReadDifferentlyAreMalformed(_ json: String) async throws {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", json: json)
        #expect(r.status == 400)
        let p = try problem(r)
        #expect(p.code == "malformed_json")
        #expect(p.detail?.contains("mallory") != true)
    }

    @Test func invalidUTF8IsMalformed() async throws {
        let body: [UInt8] = Array(#"{"name":""#.utf8) + [0xC3, 0x28] + Array(#"","count":1}"#.utf8)
        let r = await client.execute("POST", "/v1/tenants/acme/echo", headers: [("Content-Type", "application/json")], body: body)
        #expect(try problem(r).code == "malformed_json")
    }

    @Test(arguments: [
        (#"{"count":1}"#, "name"),
        (#"{"name":5,"count":1}"#, "name"),
        (#"{"name":"x","count":null}"#, "count"),
        (#"{"name":"x","count":1,"nested":{"items":[1,"a"]}}"#, "nested.items[1]"),
    ])
    func invalidFieldsAreNamed(_ json: String, _ field: String) async throws {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", json: json)
        #expect(r.status == 400)
        let p = try problem(r)
        #expect(p.code == "invalid_field")
        #expect(p.field == field)
    }

    @Test(arguments: [
        ("application/json", 200), ("Application/JSON; charset=utf-8", 200), ("  application/json ;charset=utf-8", 200),
        ("application/problem+json", 200), ("\tapplication/json\t", 200),
        ("text/plain", 415), ("application/jsonx", 415), ("application/json-seq", 415), ("", 415), (";application/json", 415),
    ])
    func mediaTypeIsReadWithoutParametersOrSpaces(_ contentType: String, _ status: Int) async {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", headers: [("Content-Type", contentType)], body: Array(#"{"name":"x","count":1}"#.utf8))
        #expect(r.status == status, "\(contentType)")
    }

    @Test func nonJSONBodiesAre415() async throws {
        let r = await client.execute("POST", "/v1/tenants/acme/echo", headers: [("Content-Type", "text/plain")], body: Array("hi".utf8))
        #expect(r.status == 415)
        #expect(try problem(r).code == "unsupported_media_type")
    }

    @Test func invalidTenantIdsAre400() async throws {
        let r = await client.execute("POST", "/v1/tenants/ACME!/echo", json: "{}")
        #expect(r.status == 400)
        #expect(try problem(r).field == "tenant")
    }

    @Test func unknownErrorsAre500WithoutInternals() async throws {
        let r = await client.execute("GET", "/boom")
        #expect(r.status == 500)
        let text = String(decoding: r.body, as: UTF8.self)
        #expect(!text.contains("hunter2") && !text.contains("Secret"))
        #expect(try problem(r).code == "internal_error")
    }

    @Test func knownErrorsKeepTheirStatusAndCode() async throws {
        let r = await client.execute("GET", "/teapot")
        #expect(r.status == 418)
        let p = try problem(r)
        #expect(p.code == "teapot" && p.detail == "short and stout" && p.type == "urn:signet:problem:teapot")
    }

    /// Each request counts in the series of its method, route template (never the raw path;
    /// "unmatched" when none) and status, with the labels as before the series were keyed by
    /// the route's index.
    @Test func requestMetricsNameTheRouteTemplateAndStatus() async throws {
        var r = Router()
        r.get("/v1/metrics-labels/{id}") { _, context in HTTPResponse(status: context.parameter("id") == "teapot" ? 418 : 200) }
        r.put("/v1/metrics-labels/{id}/only-put") { _, _ in HTTPResponse(status: 204) }
        let client = HTTPTestClient(HTTPApplication(router: r, logger: Logger(label: "test", level: .critical)))
        for path in ["/v1/metrics-labels/a", "/v1/metrics-labels/b", "/v1/metrics-labels/teapot"] { _ = await client.execute("GET", path) }
        _ = await client.execute("HEAD", "/v1/metrics-labels/c")
        _ = await client.execute("GET", "/v1/metrics-labels/a/only-put")
        let text = MetricsRegistry.shared.render()
        #expect(text.contains(#"signet_http_requests_total{method="GET",route="/v1/metrics-labels/{id}",status="200"} 2"#))
        #expect(text.contains(#"signet_http_requests_total{method="GET",route="/v1/metrics-labels/{id}",status="418"} 1"#))
        #expect(text.contains(#"signet_http_requests_total{method="HEAD",route="/v1/metrics-labels/{id}",status="200"} 1"#))
        #expect(text.contains(#"signet_http_requests_total{method="GET",route="/v1/metrics-labels/{id}/only-put",status="405"} 1"#))
        #expect(text.contains(#"signet_http_request_duration_seconds_count{method="GET",route="/v1/metrics-labels/{id}",status="200"} 2"#))
        #expect(!text.contains("route=\"/v1/metrics-labels/a"))
    }

    @Test func routingErrors() async throws {
        let notFound = await client.execute("GET", "/nope")
        #expect(notFound.status == 404)
        #expect(try problem(notFound).code == "not_found")
        let wrongMethod = await client.execute("GET", "/v1/tenants/acme/echo")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "POST")
    }
}

@Suite struct HTTPApplicationPathTests {
    @Test func controlCharactersInPathParametersAre400BeforeAnyHandler() async throws {
        let ran = PlainLock(false)
        var r = Router()
        r.put("/v1/tenants/{tenant}") { _, _ in
            ran.withLock { $0 = true }
            return HTTPResponse(status: 201)
        }
        let client = HTTPTestClient(HTTPApplication(router: r, logger: Logger(label: "test", level: .critical)))
        for path in ["/v1/tenants/a%00b", "/v1/tenants/a%0Ab", "/v1/tenants/a%C2%85b", "/v1/tenants/a%FF", "/v1/tenants/a%2Fb"] {
            let response = await client.execute("PUT", path)
            #expect(response.status == 400, "\(path)")
            #expect(try problem(response).code == "invalid_path", "\(path)")
        }
        #expect(ran.withLock { $0 } == false)
        #expect(await client.execute("PUT", "/v1/tenants/a/").status == 404)
    }
}
