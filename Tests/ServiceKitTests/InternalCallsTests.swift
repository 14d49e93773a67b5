import Foundation
import HTTPServer
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
}
