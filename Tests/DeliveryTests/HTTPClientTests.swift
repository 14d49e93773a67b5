import CCurl
import Foundation
import Testing

@testable import Delivery

/// ``HTTPClient`` against a canned loopback server (``CannedHTTPServer``) and the failure
/// sockets of ``LoopbackSocket``: what goes out, what comes back, and each refusal.
@Suite(.timeLimit(.minutes(1)))
struct HTTPClientTests {
    static let client = HTTPClient(label: "signet.test.http", lanes: 2)

    static func ok(_ body: String, status: String = "200 OK") -> String {
        "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    }

    @Test func sendsTheMethodHeadersAndBodyAndReturnsStatusAndBody() async throws {
        let server = try CannedHTTPServer(responses: [Self.ok(#"{"ok":true}"#, status: "201 Created")])
        let answer = try await Self.client.send(
            "POST", "http://127.0.0.1:\(server.port)/v1/x?y=1", headers: ["X-Signet-Service: pii", "Content-Type: application/json"],
            body: Array(#"{"a":1}"#.utf8), timeout: .seconds(10), responseLimit: 1024)
        #expect(answer == HTTPClient.Response(status: 201, body: Array(#"{"ok":true}"#.utf8), truncated: false))
        let request = try #require(server.requests.first)
        #expect(request.hasPrefix("POST /v1/x?y=1 HTTP/1.1\r\n"))
        #expect(request.contains("\r\nX-Signet-Service: pii\r\n"))
        #expect(request.contains("\r\nContent-Type: application/json\r\n"))
        #expect(!request.lowercased().contains("\r\nexpect:"))
        #expect(request.hasSuffix("\r\n\r\n{\"a\":1}"))
    }

    @Test func aGetWithoutBodyAndACustomMethod() async throws {
        let server = try CannedHTTPServer(responses: [Self.ok("a"), Self.ok("", status: "204 No Content")])
        let get = try await Self.client.send("GET", "http://127.0.0.1:\(server.port)/keys", timeout: .seconds(10), responseLimit: 16)
        let delete = try await Self.client.send("DELETE", "http://127.0.0.1:\(server.port)/k/1", timeout: .seconds(10), responseLimit: 16)
        #expect(get.status == 200 && get.body == Array("a".utf8))
        #expect(delete.status == 204 && delete.body.isEmpty)
        #expect(server.requests.map { $0.split(separator: "\r\n").first.map(String.init) } == ["GET /keys HTTP/1.1", "DELETE /k/1 HTTP/1.1"])
    }

    @Test func aBodyOverTheLimitIsCutAndMarked() async throws {
        let server = try CannedHTTPServer(responses: [Self.ok("0123456789")])
        let answer = try await Self.client.send("GET", "http://127.0.0.1:\(server.port)/", timeout: .seconds(10), responseLimit: 4)
        #expect(answer.body == Array("0123".utf8))
        #expect(answer.truncated)
    }

    @Test func aBodyOfExactlyTheLimitIsNotMarked() async throws {
        let server = try CannedHTTPServer(responses: [Self.ok("0123")])
        let answer = try await Self.client.send("GET", "http://127.0.0.1:\(server.port)/", timeout: .seconds(10), responseLimit: 4)
        #expect(answer.body == Array("0123".utf8) && !answer.truncated)
    }

    @Test func redirectsAreReturnedUnlessFollowingIsAsked() async throws {
        let redirect = "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/there\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let server = try CannedHTTPServer(responses: [redirect, redirect, Self.ok("there")])
        let kept = try await Self.client.send("GET", "http://127.0.0.1:\(server.port)/here", timeout: .seconds(10), responseLimit: 64)
        #expect(kept.status == 302)
        let followed = try await Self.client.send(
            "GET", "http://127.0.0.1:\(server.port)/here", timeout: .seconds(10), responseLimit: 64, followRedirects: true)
        #expect(followed.status == 200 && followed.body == Array("there".utf8))
        #expect(server.requests.last?.hasPrefix("GET /there ") == true)
    }

    @Test(arguments: ["X-A: 1\r\nX-Injected: 2", "X-A: 1\nX-B: 2", "X-A: \u{0}"])
    func headerLinesWithLineBreaksOrNULAreRefusedBeforeSending(_ line: String) async throws {
        let server = try CannedHTTPServer(responses: [Self.ok("never")])
        await #expect(throws: HTTPClient.Failure.self) {
            try await Self.client.send("GET", "http://127.0.0.1:\(server.port)/", headers: [line], timeout: .seconds(2), responseLimit: 8)
        }
        #expect(server.requests.isEmpty)
    }

    @Test func onlyHTTPAndHTTPSAreAllowed() async throws {
        let error = await #expect(throws: HTTPClient.Failure.self) {
            try await Self.client.send("GET", "file:///etc/hostname", timeout: .seconds(2), responseLimit: 64)
        }
        #expect(error?.code == Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue))
    }

    @Test func anHTTPSOnlyRequestRefusesPlainHTTPBeforeConnecting() async throws {
        let server = try CannedHTTPServer(responses: [Self.ok("never")])
        let error = await #expect(throws: HTTPClient.Failure.self) {
            try await Self.client.send(
                "GET", "http://127.0.0.1:\(server.port)/", timeout: .seconds(2), responseLimit: 64, followRedirects: true, httpsOnly: true)
        }
        #expect(error?.code == Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue))
        #expect(server.requests.isEmpty)
    }

    @Test func aRefusedConnectionIsAFailureThatIsNotATimeout() async throws {
        let port = try LoopbackSocket.closedPort()
        let error = await #expect(throws: HTTPClient.Failure.self) {
            try await Self.client.send("GET", "http://127.0.0.1:\(port)/", timeout: .seconds(10), responseLimit: 8)
        }
        #expect(error?.code == Int(CURLE_COULDNT_CONNECT.rawValue))
        #expect(error?.isTimeout == false)
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        let socket = try LoopbackSocket.listening()
        let error = await #expect(throws: HTTPClient.Failure.self) {
            try await Self.client.send("GET", "http://127.0.0.1:\(socket.port)/", timeout: .milliseconds(300), responseLimit: 8)
        }
        #expect(error?.isTimeout == true)
    }

    @Test func cancellingTheTaskAbortsTheRequest() async throws {
        let socket = try LoopbackSocket.listening()
        let task = Task { try await Self.client.send("GET", "http://127.0.0.1:\(socket.port)/", timeout: .seconds(60), responseLimit: 8) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
