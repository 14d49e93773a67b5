import Crypto
import FIDO
import Foundation
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport
@testable import AuthenticationService

/// Sign-ins that find a key without a username (#18: `uaf.registered.v2` and
/// `credential.registered.v2` name the user by subject reference only): the authentication
/// service asks the registration service whose the reference is, once per user, checks the
/// answer, and answers 503 `user_directory_unavailable` when it cannot ask or the answer does
/// not give the reference; never a session for a guessed user.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct SubjectUsernamesTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    /// A stand-in for the registration service's `GET /v1/internal/tenants/{t}/subjects/{ref}/username`:
    /// answers the usernames it is given (by reference), 404 otherwise, and counts the questions.
    final class RegistrationStub: Sendable {
        struct State {
            var answers: [String: String] = [:]
            var asked = 0
        }
        /// The stub's state, shared with its handler.
        final class Box: Sendable {
            let mutex = Mutex(State())
            func withLock<R>(_ body: (inout State) -> R) -> R { mutex.withLock { body(&$0) } }
        }
        let state = Box()
        let server: HTTPServer

        init() throws {
            let state = state
            server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
                let parts = request.path.split(separator: "/")
                let notFound = HTTPResponse(
                    status: 404, headers: [("Content-Type", "application/problem+json")],
                    body: Array(#"{"type":"about:blank","title":"Not found","status":404,"code":"not_found"}"#.utf8))
                guard request.method == "GET", parts.count == 7, parts[1] == "internal", parts[4] == "subjects", parts[6] == "username",
                    request.header("Authorization")?.hasPrefix("Bearer ") == true
                else { return notFound }
                let ref = String(parts[5])
                let username: String? = state.withLock { s in
                    s.asked += 1
                    return s.answers[ref]
                }
                guard let username, let body = try? JSONValueEncoder().encodeToBytes(SubjectUsername(subjectRef: ref, username: username)) else {
                    return notFound
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
            }
            try server.start()
        }

        var url: String { "http://127.0.0.1:\(server.boundPort)" }
        var asked: Int { state.withLock { $0.asked } }
        func answer(_ ref: String, with username: String) { state.withLock { $0.answers[ref] = username } }
    }

    static func signInWithoutUsername(_ h: Harness, _ authenticator: SoftUAFAuthenticator) async throws -> (status: Int, body: String) {
        try await UAFSignInTests.finish(h, try authenticator.authenticate(try await UAFSignInTests.request(h, "{}")))
    }

    static func kept(_ h: Harness) async throws -> [String] {
        try await h.context.pool.withConnection { try await $0.query("SELECT username FROM subject_usernames ORDER BY username") }
            .compactMap { $0.string("username") }
    }

    @Test func aKeyFoundWithoutAUsernameIsResolvedOnceAndKept() async throws {
        let registration = try RegistrationStub()
        defer { Task { await registration.server.shutdown() } }
        let h = try await Harness.withDatabase(environment: ["SIGNET_REGISTRATION_URL": registration.url])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await UAFSignInTests.registered(h, authenticator)
        registration.answer(h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), with: "alice")
        #expect(try await Self.kept(h).isEmpty)

        let first = try await Self.signInWithoutUsername(h, authenticator)
        #expect(first.status == 200, "\(first.body)")
        let result = try JSONValueDecoder().decode(UAFAuthenticationResult.self, from: Array(first.body.utf8))
        #expect(result.username == "alice")
        #expect(registration.asked == 1)
        #expect(try await Self.kept(h) == ["alice"])
        // Again: answered from the kept row, registration is not asked.
        let second = try await Self.signInWithoutUsername(h, authenticator)
        #expect(second.status == 200, "\(second.body)")
        #expect(registration.asked == 1)
        // A sign-in that names the user never asks.
        let named = try await UAFSignInTests.finish(h, try authenticator.authenticate(try await UAFSignInTests.request(h)))
        #expect(named.status == 200 && registration.asked == 1, "\(named.body)")
    }

    @Test func aWrongOrMissingAnswerIsRefusedNeverAGuessedUser() async throws {
        let registration = try RegistrationStub()
        defer { Task { await registration.server.shutdown() } }
        let h = try await Harness.withDatabase(environment: ["SIGNET_REGISTRATION_URL": registration.url])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await UAFSignInTests.registered(h, authenticator)
        let ref = h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice")

        // Registration does not know the reference (the user was erased): the key is not registered.
        let erased = try await Self.signInWithoutUsername(h, authenticator)
        #expect(erased.status == 400 && erased.body.contains("credential_not_found"), "\(erased.body)")
        // An answer whose username does not give the reference: 503, no session, nothing kept.
        registration.answer(ref, with: "mallory")
        let response = try authenticator.authenticate(try await UAFSignInTests.request(h, "{}"))
        let wrong = try await UAFSignInTests.finish(h, response)
        #expect(wrong.status == 503 && wrong.body.contains("user_directory_unavailable") && !wrong.body.contains("sessionToken"), "\(wrong.body)")
        #expect(try await Self.kept(h).isEmpty)
        // The refusal came before the challenge was spent: once registration answers right, the
        // same response signs alice in.
        registration.answer(ref, with: "alice")
        let retried = try await UAFSignInTests.finish(h, response)
        #expect(retried.status == 200 && retried.body.contains(#""username":"alice""#), "\(retried.body)")
        #expect(try await Self.kept(h) == ["alice"])
    }

    @Test func registrationUnreachableIs503() async throws {
        // A port nothing listens on: a stub started and shut down.
        let gone = try RegistrationStub()
        let url = gone.url
        await gone.server.shutdown()
        let h = try await Harness.withDatabase(environment: ["SIGNET_REGISTRATION_URL": url])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await UAFSignInTests.registered(h, authenticator)

        let refused = try await Self.signInWithoutUsername(h, authenticator)
        #expect(refused.status == 503, "\(refused.body)")
        let problem = try JSONValueDecoder().decode(ProblemBody.self, from: Array(refused.body.utf8))
        #expect(problem.code == "user_directory_unavailable")
        #expect(try await Self.kept(h).isEmpty)
        // A sign-in that names the user does not need the registration service.
        let named = try await UAFSignInTests.finish(h, try authenticator.authenticate(try await UAFSignInTests.request(h)))
        #expect(named.status == 200, "\(named.body)")
    }

    struct ProblemBody: Decodable {
        let code: String
        let status: Int
    }
}
