import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What the gateway exposes: never the admin or service-to-service routes, whatever spelling
/// of the path is tried; and a service reachable from other hosts never starts with the
/// public development tokens.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct GatewayExposureStackTests {
    /// Sends `target` verbatim as the request target to the gateway (127.0.0.1:8080): URL types
    /// would normalise the spellings under test. Returns the status and the body.
    static func raw(_ method: String, _ target: String, headers: [String: String] = [:], body: String = "") throws -> (Int, String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestStackError("socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(8080).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw TestStackError("connect to the gateway") }
        var request = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for (k, v) in headers { request += "\(k): \(v)\r\n" }
        request += "\r\n" + body
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return (status, text)
    }

    @Test func adminAndInternalRoutesAreNotServedThroughTheGateway() throws {
        try TestStack.require()
        let admin = ["Authorization": "Bearer \(TestStack.adminToken)", "Content-Type": "application/json"]
        let internalCall = ["Authorization": "Bearer dev-internal-token", "X-Signet-Service": "oob", "Content-Type": "application/json"]
        let tries: [(String, String, [String: String], String)] = [
            ("GET", "/registration/v1/admin/tenants/demo", admin, ""),
            ("PUT", "/registration/v1/admin/tenants/gw-probe", admin, #"{"displayName":"x","rpId":"example.com","origins":["https://example.com"]}"#),
            ("GET", "/registration//v1/admin/tenants/demo", admin, ""),
            ("GET", "/registration/v1//admin/tenants/demo", admin, ""),
            ("GET", "/registration/v1/%61dmin/tenants/demo", admin, ""),
            ("GET", "/registration/v1/x/../admin/tenants/demo", admin, ""),
            ("GET", "/registration/./v1/admin/tenants/demo", admin, ""),
            ("GET", "/registration/v1/admin", admin, ""),
            ("PUT", "/authentication/v1/admin/tenants/demo/authentication-settings", admin, #"{"lockAfterFailures":1000}"#),
            ("POST", "/pii/v1/internal/tenants/demo/pii", internalCall, #"{"subject":"x","kind":"email","value":"a@example.com"}"#),
            ("POST", "/pii/v1/internal/tenants/demo/pii/ref/read", internalCall, #"{"purpose":"otp_delivery"}"#),
            ("DELETE", "/pii/v1/internal/tenants/demo/subjects/x", internalCall, ""),
            ("POST", "/pii//v1/internal/tenants/demo/pii", internalCall, "{}"),
            ("POST", "/pii/v1/%69nternal/tenants/demo/pii", internalCall, "{}"),
            ("POST", "/authentication/v1/internal/tenants/demo/registration-decision", internalCall, #"{"username":"a"}"#),
        ]
        for (method, target, headers, body) in tries {
            let (status, text) = try Self.raw(method, target, headers: headers, body: body)
            #expect(status == 404 && text.contains(#""code":"not_found""#), "\(method) \(target): \(status)")
        }
        // The public routes still pass.
        #expect(try Self.raw("GET", "/registration/v1/tenants/demo").0 == 200)
        #expect(try Self.raw("GET", "/authentication/.well-known/jwks.json").0 == 200)
    }

    /// The demo relying party's backend (the gateway's /demo/api/ routes) adds no passkey to
    /// an existing user's account for a stranger: registration needs the page's sign-up token
    /// (opened only for a username with nothing registered) or the user's own session token.
    @Test func theDemoBackendAddsNoPasskeyToSomeoneElsesAccount() async throws {
        try TestStack.require()
        let gateway = "http://127.0.0.1:8080/demo/api"
        let victim = "demo-victim-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await AdaptiveSignInStackTests().register(victim, in: .init(id: "demo", key: TestStack.environment["SIGNET_DEMO_RP_API_KEY"] ?? "dev-demo-rp-key"))
        let json = ["Content-Type": "application/json"]
        let options = try await TestHTTP.send("POST", "\(gateway)/registrations/options", headers: json, body: Array(#"{"username":"\#(victim)"}"#.utf8))
        #expect(options.status == 401, "\(options.text)")
        let signup = try await TestHTTP.send("POST", "\(gateway)/signups", headers: json, body: Array(#"{"username":"\#(victim)"}"#.utf8))
        let signupCode = try signup.json()["code"] as? String
        #expect(signup.status == 409 && signupCode == "username_taken", "\(signup.text)")
        // A newcomer signs up and registers for their own username only.
        let newcomer = "demo-new-\(UInt32.random(in: 0...UInt32.max))"
        let opened = try await TestHTTP.send("POST", "\(gateway)/signups", headers: json, body: Array(#"{"username":"\#(newcomer)"}"#.utf8))
        let token = try #require(try opened.json()["signUpToken"] as? String, "\(opened.text)")
        let auth = json.merging(["Authorization": "Bearer \(token)"]) { $1 }
        let own = try await TestHTTP.send("POST", "\(gateway)/registrations/options", headers: auth, body: Array(#"{"username":"\#(newcomer)"}"#.utf8))
        #expect(own.status == 200, "\(own.text)")
        let other = try await TestHTTP.send("POST", "\(gateway)/registrations/options", headers: auth, body: Array(#"{"username":"\#(victim)"}"#.utf8))
        #expect(other.status == 403, "\(other.text)")
    }

    @Test func aServiceOffLoopbackRefusesTheDevelopmentTokens() async throws {
        try TestStack.require()
        // Port 0: nothing is bound if it were (wrongly) to start.
        let (process, logPath) = try TestStack.launch(
            "signet-pii", environment: ["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_HTTP_PORT": "0", "SIGNET_ADMIN_TOKEN": "", "SIGNET_INTERNAL_TOKEN": ""],
            logName: "pii-off-loopback")
        let exited = await TestStack.eventually(timeout: .seconds(20)) { !process.isRunning }
        if !exited { process.terminate() }
        #expect(exited && process.terminationStatus == 78)
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("SIGNET_ADMIN_TOKEN") && !log.contains("dev-admin-token"), "\(log)")
    }
}
