import Foundation
import HTTPServer
import Platform
import Schema
import Testing
@testable import ServiceKit
import TestSupport

/// A call that ran out of time is told from one that failed by libcurl's own word, not by
/// another clock (libcurl rounds to whole milliseconds and can end a call up to one early).
@Suite struct InternalCallsTests {
    let calls = InternalCalls(token: "test-internal-token", service: "registration")

    @Test func aServiceThatNeverAnswersTimesOut() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        do {
            _ = try await calls.postTellingTimeouts("http://127.0.0.1:\(silent.port)/v1/internal/x", ["a": 1], as: [String: Int].self, timeout: 0.2)
            Issue.record("a service that never answers answered")
        } catch let failure as InternalCalls.Failure {
            #expect(failure.timedOut)
            #expect(failure.problem.code == .unavailable)
            #expect(failure.problem.cause?.contains("curl 28") == true)
        }
    }

    @Test func aRefusedConnectionFailsWithoutTimingOut() async throws {
        do {
            _ = try await calls.postTellingTimeouts("http://127.0.0.1:9/v1/internal/x", ["a": 1], as: [String: Int].self, timeout: 2)
            Issue.record("a refused connection answered")
        } catch let failure as InternalCalls.Failure {
            #expect(!failure.timedOut)
            #expect(failure.problem.code == .unavailable)
        }
    }

    @Test func theOtherCallsStillThrowTheProblem() async throws {
        // post and get keep throwing the HTTPError the edge answers with (503 here).
        await #expect(throws: HTTPError.self) {
            _ = try await calls.post("http://127.0.0.1:9/v1/internal/x", ["a": 1], as: [String: Int].self, timeout: 2)
        }
        await #expect(throws: HTTPError.self) {
            _ = try await calls.get("http://127.0.0.1:9/v1/internal/x", as: [String: Int].self, timeout: 2)
        }
    }

    // MARK: - Who may call

    static let tokens = [
        "registration": "registration-internal-token-0123456789abcdef", "oob": "oob-internal-token-0123456789abcdef-0123",
        "pii": "pii-internal-token-0123456789abcdef-0123456",
    ]

    static func hash(_ token: String) -> String { TestHex.sha256(token) }

    static let callersText = tokens.map { "\($0.key)=\(hash($0.value))" }.sorted().joined(separator: ",")

    static func request(token: String?, caller: String?) -> HTTPRequest {
        var headers: [(name: String, value: String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if let caller { headers.append(("X-Signet-Service", caller)) }
        return HTTPRequest(method: "GET", path: "/v1/internal/x", headers: headers)
    }

    /// With a token per service, a call is admitted only with the token of the service it
    /// names: the oob service's token cannot call as the registration service, a service not
    /// listed cannot call at all, and the shared token of the other mode is refused.
    @Test func aCallerIsAdmittedOnlyWithItsOwnToken() throws {
        let pii = try InternalCalls.fromEnvironment(
            Environment(["SIGNET_INTERNAL_TOKEN": Self.tokens["pii"]!, "SIGNET_INTERNAL_CALLERS": Self.callersText]), service: "pii")
        #expect(pii.callers?.count == 3)
        #expect(try pii.requireCaller(Self.request(token: Self.tokens["oob"], caller: "oob")) == "oob")
        #expect(try pii.requireCaller(Self.request(token: Self.tokens["registration"], caller: "registration")) == "registration")
        for (token, caller) in [
            (Self.tokens["oob"], "registration"), (Self.tokens["registration"], "oob"), (Self.tokens["oob"], "authentication"),
            ("dev-internal-token", "oob"), (Self.tokens["oob"], nil), (nil, "oob"), (Self.tokens["oob"], "someone"),
        ] {
            #expect(throws: HTTPError.self, "\(caller ?? "-")") { try pii.requireCaller(Self.request(token: token, caller: caller)) }
        }
        // One shared token: whoever holds it names any service (what the per-service mode ends).
        let shared = InternalCalls(token: "shared-internal-token-0123456789abcdef", service: "pii")
        #expect(try shared.requireCaller(Self.request(token: "shared-internal-token-0123456789abcdef", caller: "registration")) == "registration")
        #expect(throws: HTTPError.self) { try shared.requireCaller(Self.request(token: Self.tokens["oob"], caller: "oob")) }
    }

    /// `SIGNET_INTERNAL_CALLERS` is read strictly, and a service's own entry must be the hash
    /// of its own token (a deployment that swapped two services' tokens does not start).
    @Test func theCallersListIsReadStrictly() throws {
        let bad = [
            "registration", "registration=zz", "registration=\(String(repeating: "a", count: 63))", "someone=\(Self.hash("x"))",
            "oob=\(Self.hash("x")),oob=\(Self.hash("y"))", ",", "oob=\(Self.hash("x"))=",
        ]
        for text in bad {
            #expect(throws: Environment.ConfigurationError.self, "\(text)") {
                try InternalCalls.fromEnvironment(Environment(["SIGNET_INTERNAL_CALLERS": text]), service: "transaction")
            }
        }
        // The pii service given the oob service's token.
        #expect(throws: Environment.ConfigurationError.self) {
            try InternalCalls.fromEnvironment(
                Environment(["SIGNET_INTERNAL_TOKEN": Self.tokens["oob"]!, "SIGNET_INTERNAL_CALLERS": Self.callersText]), service: "pii")
        }
        // Upper-case digits and spaces around entries are fine; without the variable, one shared token.
        let upper = "oob=\(Self.hash("x").uppercased()) , pii=\(Self.hash("y"))"
        #expect(try InternalCalls.fromEnvironment(Environment(["SIGNET_INTERNAL_CALLERS": upper]), service: "transaction").callers?.count == 2)
        #expect(try InternalCalls.fromEnvironment(Environment([:]), service: "transaction").callers == nil)
    }

    /// A vault reference made here has the form the vault checks, and each is new; a store is
    /// counted as possibly stored unless the vault refused it (a 4xx).
    @Test func vaultReferencesAndWhatMayHaveBeenStored() {
        let refs = (0..<200).map { _ in InternalCalls.newVaultReference() }
        #expect(refs.allSatisfy(PIIReferenceText.isWellFormed) && Set(refs).count == 200)
        for bad in ["", "pii_", "pii_" + String(repeating: "A", count: 32), "pii_" + String(repeating: "0", count: 31), "pii_" + String(repeating: "g", count: 32),
            "PII_" + String(repeating: "0", count: 32), "pii_" + String(repeating: "0", count: 33), "pii_" + String(repeating: "0", count: 31) + "é"]
        {
            #expect(!PIIReferenceText.isWellFormed(bad), "\(bad)")
        }
        #expect(!InternalCalls.mayHaveStored(HTTPError(.conflict)))
        #expect(!InternalCalls.mayHaveStored(HTTPError.invalid("value", "no")))
        #expect(InternalCalls.mayHaveStored(HTTPError(.unavailable)))
        #expect(InternalCalls.mayHaveStored(HTTPError(.internalError)))
        #expect(InternalCalls.mayHaveStored(CancellationError()))
    }
}
