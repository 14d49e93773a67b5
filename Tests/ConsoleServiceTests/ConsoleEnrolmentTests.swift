import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// Enrolling an operator's first passkey with the enrolment code.
@Suite struct ConsoleEnrolmentTests {
    static func fixture(existingCredentials: String = "[]", environment: [String: String] = [:]) throws -> ConsoleFixture {
        try ConsoleFixture(
            environment: environment,
            upstream: FakeUpstream { call in
                switch (call.method, call.path) {
                case ("GET", _): FakeUpstream.json(#"{"credentials":\#(existingCredentials)}"#)
                case (_, let p) where p.hasSuffix("/registrations/options"): FakeUpstream.json(#"{"handle":"handle-1","publicKey":{"challenge":"c"}}"#)
                default: FakeUpstream.json(#"{"credentialId":"abc"}"#, status: 201)
                }
            })
    }

    static func options(_ username: String, code: String = ConsoleFixture.enrolmentCode) -> String {
        #"{"username":"\#(username)","code":"\#(code)"}"#
    }

    @Test func anOperatorWithoutAPasskeyEnrolsOneAndIsSignedIn() async throws {
        let fixture = try Self.fixture()
        let options = await fixture.send("POST", "/console/api/enrolments/options", json: Self.options("otto"))
        #expect(options.status == 200)
        #expect(try JSONParser.parse(options.body)["handle"]?.stringValue == "handle-1")
        let finish = await fixture.send("POST", "/console/api/enrolments", json: #"{"handle":"handle-1","credential":{"id":"abc"}}"#)
        #expect(finish.status == 200 && finish.header("Set-Cookie")?.contains("HttpOnly") == true)
        #expect(try JSONParser.parse(finish.body)["role"]?.stringValue == "operator")
        #expect(fixture.upstream.calls.map { "\($0.method) \($0.path) \($0.credential)" } == [
            "GET /v1/tenants/operators/users/otto/credentials operatorsRelyingParty",
            "POST /v1/tenants/operators/webauthn/registrations/options operatorsRelyingParty",
            "GET /v1/tenants/operators/users/otto/credentials operatorsRelyingParty",
            "POST /v1/tenants/operators/webauthn/registrations operatorsRelyingParty",
        ])
        // The handle enrols once.
        let again = await fixture.send("POST", "/console/api/enrolments", json: #"{"handle":"handle-1","credential":{"id":"abc"}}"#)
        #expect(again.status == 403 && again.code == "console_enrolment_refused")
    }

    /// The options' check that the operator has no passkey is up to five minutes old at the
    /// finish: a passkey enrolled in between (the operator's own, or one enrolled after an
    /// erasure) refuses the finish, and nothing is registered.
    @Test func aPasskeyEnrolledSinceTheOptionsRefusesTheFinish() async throws {
        let lists = PlainLock(0)
        let fixture = try ConsoleFixture(
            upstream: FakeUpstream { call in
                switch (call.method, call.path) {
                case ("GET", _):
                    let n = lists.withLock { n in
                        n += 1
                        return n
                    }
                    return FakeUpstream.json(n == 1 ? #"{"credentials":[]}"# : #"{"credentials":[{"credentialId":"enrolled-since"}]}"#)
                case (_, let p) where p.hasSuffix("/registrations/options"): return FakeUpstream.json(#"{"handle":"handle-1","publicKey":{"challenge":"c"}}"#)
                default: return FakeUpstream.json(#"{"credentialId":"abc"}"#, status: 201)
                }
            })
        let options = await fixture.send("POST", "/console/api/enrolments/options", json: Self.options("ada"))
        #expect(options.status == 200)
        let finish = await fixture.send("POST", "/console/api/enrolments", json: #"{"handle":"handle-1","credential":{"id":"abc"}}"#)
        #expect(finish.status == 403 && finish.code == "console_enrolment_refused")
        #expect(finish.header("Set-Cookie") == nil)
        #expect(!fixture.upstream.calls.contains { $0.method == "POST" && $0.path.hasSuffix("/webauthn/registrations") }, "nothing was registered")
    }

    @Test func refusals() async throws {
        let fixture = try Self.fixture()
        let wrongCode = await fixture.send("POST", "/console/api/enrolments/options", json: Self.options("otto", code: "guess"))
        #expect(wrongCode.status == 403 && wrongCode.code == "console_enrolment_refused")
        let notAnOperator = await fixture.send("POST", "/console/api/enrolments/options", json: Self.options("mallory"))
        #expect(notAnOperator.status == 403 && notAnOperator.code == "console_enrolment_refused")
        let unknownHandle = await fixture.send("POST", "/console/api/enrolments", json: #"{"handle":"made-up","credential":{}}"#)
        #expect(unknownHandle.status == 403 && unknownHandle.code == "console_enrolment_refused")
        #expect(fixture.upstream.calls.isEmpty)

        let enrolled = try Self.fixture(existingCredentials: #"[{"credentialId":"old"}]"#)
        let second = await enrolled.send("POST", "/console/api/enrolments/options", json: Self.options("otto"))
        #expect(second.status == 403 && second.code == "console_enrolment_refused")
        #expect(enrolled.upstream.calls.count == 1, "only the credential list was asked")

        let closed = try ConsoleFixture(environment: ["SIGNET_CONSOLE_ENROLMENT_CODE": ""])
        let noCode = await closed.send("POST", "/console/api/enrolments/options", json: Self.options("otto"))
        #expect(noCode.status == 403 && noCode.code == "console_enrolment_refused")
    }

    @Test func offLoopbackDevelopmentSecretsAreRefused() throws {
        let env = ConsoleFixture.environment(["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_CONSOLE_ENROLMENT_CODE": "short"])
        #expect {
            try ConsoleService.configuration(env)
        } throws: { error in
            let e = error as? Environment.ConfigurationError
            return e?.variable == "SIGNET_ADMIN_TOKEN, SIGNET_CONSOLE_RP_API_KEY, SIGNET_CONSOLE_ENROLMENT_CODE" && !(e?.description.contains("short") ?? true)
        }
        let strong = String(repeating: "s", count: 40)
        let ok = try ConsoleService.configuration(ConsoleFixture.environment([
            "SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_ADMIN_TOKEN": strong, "SIGNET_CONSOLE_RP_API_KEY": strong + "k", "SIGNET_CONSOLE_ENROLMENT_CODE": strong + "c",
        ]))
        #expect(ok.http.host == "0.0.0.0")
    }

    @Test func aBadOperatorListIsRefused() {
        for bad in ["ada", "ada=root", "=viewer", "ada=viewer,bob"] {
            #expect(throws: Environment.ConfigurationError.self, "\(bad)") {
                try ConsoleService.configuration(ConsoleFixture.environment(["SIGNET_CONSOLE_OPERATORS": bad]))
            }
        }
    }
}
