import Foundation
import HTTPServer
import Testing
@testable import ServiceKit

/// A call that ran out of time is told from one that failed by libcurl's own word, not by
/// another clock (libcurl rounds to whole milliseconds and can end a call up to one early).
@Suite struct InternalCallsTests {
    let calls = InternalCalls(token: "test-internal-token", service: "registration")

    @Test func aServiceThatNeverAnswersTimesOut() async throws {
        let silent = try QuietListener()
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

/// A loopback listener that never accepts: connections complete in the kernel's backlog and
/// requests are never answered.
private final class QuietListener: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var out = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard fd >= 0, bound == 0, listen(fd, 16) == 0,
            withUnsafeMutablePointer(to: &out, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0
        else {
            if fd >= 0 { _ = Glibc.close(fd) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: out.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
