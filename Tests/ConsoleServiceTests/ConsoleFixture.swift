import Foundation
import HTTPServer
import JSON
import Platform
import Schema
@testable import ConsoleService

/// A call the console made to a service.
struct UpstreamCall: Sendable, Equatable {
    let service: ServiceName
    let method: String
    let path: String
    let credential: UpstreamCredential
    let body: String?
}

/// The services as a table: records every call and answers from `answer`.
final class FakeUpstream: ConsoleUpstream, Sendable {
    typealias Answer = @Sendable (UpstreamCall) -> UpstreamResponse
    private let state = PlainLock<[UpstreamCall]>([])
    private let answer: Answer

    init(_ answer: @escaping Answer = { _ in UpstreamResponse(status: 200, contentType: "application/json", body: Array("{}".utf8)) }) {
        self.answer = answer
    }

    var calls: [UpstreamCall] { state.withLock { $0 } }

    func send(_ service: ServiceName, _ method: String, _ path: String, credential: UpstreamCredential, body: [UInt8]?) async throws -> UpstreamResponse {
        let call = UpstreamCall(service: service, method: method, path: path, credential: credential, body: body.map { String(decoding: $0, as: UTF8.self) })
        state.withLock { $0.append(call) }
        return answer(call)
    }

    static func json(_ text: String, status: Int = 200) -> UpstreamResponse {
        UpstreamResponse(status: status, contentType: "application/json", body: Array(text.utf8))
    }
}

/// The console in process over a ``FakeUpstream``: operators `ada` (administrator), `otto`
/// (operator) and `vera` (viewer) of the operators' tenant; `mallory` is a user of that
/// tenant without a role.
struct ConsoleFixture {
    static let origin = "http://localhost:8080"
    static let enrolmentCode = "enrol-code-for-tests-0123456789abcdef"
    let app: ConsoleApplication
    let upstream: FakeUpstream
    let events: ConsoleEventBuffer

    static var assetsDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Services/Console/Assets").path
    }

    static func environment(_ overrides: [String: String] = [:]) -> Environment {
        Environment(
            [
                "SIGNET_CONSOLE_OPERATORS": "ada=administrator, otto=operator, vera=viewer", "SIGNET_CONSOLE_ASSETS_DIR": assetsDirectory,
                "SIGNET_CONSOLE_ENROLMENT_CODE": enrolmentCode, "SIGNET_CONSOLE_EVENT_WAIT_MS": "200",
            ].merging(overrides) { _, new in new })
    }

    init(environment: [String: String] = [:], upstream: FakeUpstream = FakeUpstream()) throws {
        let configuration = try ConsoleService.configuration(Self.environment(environment))
        self.upstream = upstream
        events = ConsoleEventBuffer()
        app = ConsoleService.application(
            configuration, upstream: upstream, readiness: ConsoleReadiness(), events: events, logger: Logger(label: "test", level: .error))
    }

    /// Signs `username` in through the sign-in ceremony (the fake authentication service
    /// answers that user); returns the cookie token and the CSRF token.
    static func signedIn(_ username: String, environment: [String: String] = [:], answer: FakeUpstream.Answer? = nil) async throws -> (ConsoleFixture, cookie: String, csrf: String) {
        let upstream = FakeUpstream { call in
            if call.path.hasSuffix("/webauthn/authentications") {
                return FakeUpstream.json(signedInAnswer(username))
            }
            return answer?(call) ?? FakeUpstream.json("{}")
        }
        let fixture = try ConsoleFixture(environment: environment, upstream: upstream)
        let response = await fixture.send("POST", "/console/api/sign-in", json: #"{"handle":"h","credential":{"id":"x"}}"#)
        guard response.status == 200, let setCookie = response.header("Set-Cookie"),
            let token = setCookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last,
            let csrf = try JSONParser.parse(response.body)["csrfToken"]?.stringValue
        else { throw FixtureError(description: "sign-in failed: \(response.status) \(String(decoding: response.body, as: UTF8.self))") }
        return (fixture, String(token), csrf)
    }

    /// The authentication service's answer to a sign-in of `username`, its session token with
    /// `amr` (by default what an assertion with user verification gets).
    static func signedInAnswer(_ username: String, amr: [String] = ["hwk", "user", "mfa"]) -> String {
        #"{"sessionToken":"\#(sessionToken(username, amr: amr))","username":"\#(username)","credentialId":"c","expiresAt":"2030-01-01T00:00:00Z"}"#
    }

    /// A session token as the authentication service's `SessionIssuer` shapes it (compact JWS,
    /// ES256 header, `sub` and `amr`), with a signature that is not one: the console reads its
    /// claims only.
    static func sessionToken(_ username: String, amr: [String]) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let claims = #"{"sub":"\#(username)","aud":["operators"],"amr":[\#(amr.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        return part(#"{"alg":"ES256","typ":"JWT"}"#) + "." + part(claims) + "." + part("not a signature")
    }

    func send(_ method: String, _ path: String, json: String? = nil, headers: [(name: String, value: String)] = []) async -> HTTPResponse {
        var all = headers
        if json != nil { all.append(("Content-Type", "application/json")) }
        // A query string is split off and decoded as the HTTP server does.
        var query: [String: String] = [:]
        var path = path
        if let mark = path.firstIndex(of: "?") {
            for pair in path[path.index(after: mark)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[kv[0]] = kv.count > 1 ? kv[1] : ""
            }
            path = String(path[..<mark])
        }
        return await app.respond(to: HTTPRequest(method: method, path: path, query: query, headers: all, body: Array((json ?? "").utf8)))
    }

    /// A call with the session cookie and, unless `csrf` is nil, the CSRF header.
    func send(_ method: String, _ path: String, json: String? = nil, cookie: String, csrf: String?, origin: String? = nil) async -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("Cookie", "other=1; signet_console=\(cookie)")]
        if let csrf { headers.append(("X-CSRF-Token", csrf)) }
        if let origin { headers.append(("Origin", origin)) }
        return await send(method, path, json: json, headers: headers)
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
}

extension HTTPResponse {
    var code: String? { (try? JSONParser.parse(body))?["code"]?.stringValue }
}
