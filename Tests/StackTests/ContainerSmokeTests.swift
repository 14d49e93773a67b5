import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport
import Tokens

/// Where scripts/deploy-test.sh put the containers (environment variables it sets).
enum ContainerStack {
    static let env = ProcessInfo.processInfo.environment
    static var enabled: Bool { env["SIGNET_CONTAINER_GATEWAY"] != nil }
    static func value(_ name: String) throws -> String {
        guard let v = env[name], !v.isEmpty else { throw TestStackError("\(name) is not set (run scripts/deploy-test.sh)") }
        return v
    }
    static var gateway: String { get throws { try value("SIGNET_CONTAINER_GATEWAY") } }
    /// registration's own port, for the admin API.
    static var registration: String { get throws { try value("SIGNET_CONTAINER_REGISTRATION") } }
    /// The two authentication replicas, each on its own port.
    static var replicas: [String] { get throws { try value("SIGNET_CONTAINER_AUTHENTICATION_REPLICAS").split(separator: ",").map(String.init) } }
    static var adminToken: String { get throws { try value("SIGNET_CONTAINER_ADMIN_TOKEN") } }
    /// Where the SMTP sink container writes messages (a bind mount).
    static var emailDir: String { get throws { try value("SIGNET_CONTAINER_EMAIL_DIR") } }
}

/// The compose stack of deploy/ run in containers (scripts/deploy-test.sh: podman-compose,
/// PostgreSQL, the development broker, the five services with two authentication replicas, the
/// nginx gateway and the mail sink, each in its own image). Everything public goes through the
/// gateway container; admin calls go to the registration service directly (the operator's
/// internal network), because the gateway does not forward them.
///
/// Runs only when scripts/deploy-test.sh starts it (it sets SIGNET_CONTAINER_GATEWAY); `make
/// test` does not start containers.
@Suite(.enabled(if: ContainerStack.enabled), .serialized, .timeLimit(.minutes(5)))
struct ContainerSmokeTests {
    static let services = ["registration", "authentication", "transaction", "oob", "pii"]
    static let origin = "http://localhost:8080"

    struct Tenant {
        let id: String
        let key: String
    }

    func json<T: Encodable>(_ value: T) throws -> [UInt8] { try AdaptiveSignInStackTests.json(value) }
    func decode<T: Decodable>(_ type: T.Type, _ r: TestHTTP.Response) throws -> T { try AdaptiveSignInStackTests.decode(type, r) }

    func post(_ url: String, _ body: [UInt8], key: String? = nil) async throws -> TestHTTP.Response {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        return try await TestHTTP.send("POST", url, headers: headers, body: body)
    }

    /// A tenant made through the admin API, seen by all five services through the gateway, with
    /// an RP key every service that checks keys has taken.
    func tenant() async throws -> Tenant {
        let g = try ContainerStack.gateway, reg = try ContainerStack.registration, admin = try ContainerStack.adminToken
        let id = "container-\(UInt32.random(in: 0...UInt32.max))"
        let put = try await TestHTTP.json(
            "PUT", "\(reg)/v1/admin/tenants/\(id)", token: admin, json: #"{"displayName":"Container","rpId":"localhost","origins":["\#(Self.origin)"]}"#)
        try #require(put.status == 201, "\(put.text)")
        let issued = try await TestHTTP.json("POST", "\(reg)/v1/admin/tenants/\(id)/api-keys", token: admin, json: "{}")
        let key = try #require(try issued.json()["apiKey"] as? String, "\(issued.text)")
        for service in Self.services {
            let seen = await TestStack.eventually(timeout: .seconds(60)) {
                (try? await TestHTTP.send("GET", "\(g)/\(service)/v1/tenants/\(id)"))?.status == 200
            }
            #expect(seen, "\(service) does not serve tenant \(id) through the gateway")
        }
        #expect(await TestStack.eventually(timeout: .seconds(60)) {
            (try? await TestHTTP.send("DELETE", "\(g)/authentication/v1/tenants/\(id)/sessions/none", headers: ["Authorization": "Bearer \(key)"]))?.status == 404
        })
        #expect(await TestStack.eventually(timeout: .seconds(60)) {
            (try? await TestHTTP.send(
                "GET", "\(g)/transaction/v1/tenants/\(id)/transactions/\(UUID().uuidString.lowercased())", headers: ["Authorization": "Bearer \(key)"]))?.status == 404
        })
        return Tenant(id: id, key: key)
    }

    /// A passkey registered through the gateway, known to sign-in on both replicas.
    func register(_ username: String, in t: Tenant) async throws -> SoftAuthenticator {
        let g = try ContainerStack.gateway
        let base = "\(g)/registration/v1/tenants/\(t.id)/webauthn/registrations"
        let o = try decode(RegistrationOptionsResponse.self, try await post("\(base)/options", try json(RegistrationOptionsRequest(username: username)), key: t.key))
        let authenticator = try SoftAuthenticator()
        let finish = try await post(base, try json(RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Self.origin))), key: t.key)
        try #require(finish.status == 201, "\(finish.text)")
        for replica in try ContainerStack.replicas {
            let known = await TestStack.eventually(timeout: .seconds(60)) {
                guard let r = try? await post("\(replica)/v1/tenants/\(t.id)/webauthn/authentications/options", try json(AuthenticationOptionsRequest(username: username))),
                    let o = try? decode(AuthenticationOptionsResponse.self, r)
                else { return false }
                return o.publicKey.allowCredentials.contains { $0.id == authenticator.credentialIDBase64URL }
            }
            #expect(known, "\(replica) does not know the new passkey")
        }
        return authenticator
    }

    /// A sign-in through the gateway's authentication route (either replica); returns the
    /// final progress.
    func signIn(_ t: Tenant, body: String, with passkey: SoftAuthenticator) async throws -> SignInProgress {
        let g = try ContainerStack.gateway
        var started: TestHTTP.Response?
        _ = await TestStack.eventually(timeout: .seconds(60)) {
            started = try? await post("\(g)/authentication/v1/tenants/\(t.id)/signins", Array(body.utf8))
            return started?.status == 201
        }
        let s = try #require(started)
        try #require(s.status == 201, "\(s.text)")
        let signin = try decode(SignInStarted.self, s)
        return try await step(t, signin.signinId, with: passkey, challengeAt: "\(g)/authentication", verifyAt: "\(g)/authentication")
    }

    func step(_ t: Tenant, _ signin: String, with passkey: SoftAuthenticator, challengeAt a: String, verifyAt b: String) async throws -> SignInProgress {
        let path = "/v1/tenants/\(t.id)/signins/\(signin)/methods/fido2"
        let c = try await post("\(a)\(path)/challenge", Array("{}".utf8))
        try #require(c.status == 200, "\(c.text)")
        let options = try #require(try c.json()["publicKey"] as? [String: Any])
        let request = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: options))
        let v = try await post("\(b)\(path)/verify", try json(FIDO2VerifyRequest(credential: try passkey.get(request, origin: Self.origin))))
        try #require(v.status == 200, "\(v.text)")
        return try decode(SignInProgress.self, v)
    }

    /// The newest six-digit code the SMTP sink container stored for `address`.
    func emailedCode(to address: String) async throws -> String? {
        let dir = try ContainerStack.emailDir
        var found: String?
        _ = await TestStack.eventually(timeout: .seconds(60)) {
            for f in ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted().reversed() {
                guard let text = try? String(contentsOfFile: "\(dir)/\(f)", encoding: .utf8), text.contains(address) else { continue }
                let unfolded = text.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=\n", with: "")
                if let r = unfolded.range(of: #"code is [0-9]{6}"#, options: .regularExpression) {
                    found = String(unfolded[r].suffix(6))
                    return true
                }
            }
            return false
        }
        return found
    }

    @Test func aTenantAPasskeyAnEmailedCodeAndATCTokenThroughTheGateway() async throws {
        let g = try ContainerStack.gateway
        let t = try await tenant()
        let username = "ada-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await register(username, in: t)

        // A passkey sign-in through the gateway.
        let done = try await signIn(t, body: #"{"username": "\#(username)", "context": {"transactionAmount": 1}}"#, with: passkey)
        #expect(done.status == "SUCCEEDED" && done.completedMethods == ["fido2"])

        // An e-mail method: the oob service (through pii, which holds the address) sends the
        // confirmation code to the SMTP sink container.
        let email = "ada.\(UInt32.random(in: 0...UInt32.max))@example.org"
        let methods = "\(g)/registration/v1/tenants/\(t.id)/users/\(username)/methods"
        let created = try await post(methods, Array(#"{"type": "email_otp", "email": "\#(email)"}"#.utf8), key: t.key)
        try #require(created.status == 201, "\(created.text)")
        let method = try decode(MethodResource.self, created)
        let code = try #require(try await emailedCode(to: email), "no confirmation e-mail reached the sink container")
        let confirmed = try await post("\(methods)/\(method.methodId)/confirm", Array(#"{"code": "\#(code)"}"#.utf8), key: t.key)
        #expect(confirmed.status == 200 && (try? decode(MethodResource.self, confirmed).status) == "ACTIVE", "\(confirmed.text)")

        // A transaction confirmed with the passkey; the RP verifies its tcToken.
        let tx = try await post(
            "\(g)/transaction/v1/tenants/\(t.id)/transactions",
            try json(TransactionCreateRequest(
                username: username, text: "Pay €12.00 to ACME Ltd", amount: "12.00", currency: "EUR", payee: "ACME Ltd", type: "payment", expiresInSeconds: 300)),
            key: t.key)
        try #require(tx.status == 201, "\(tx.text)")
        let txID = try decode(TransactionResource.self, tx).transactionId
        // The sign-in binds to the transaction's user.
        let approved = try await signIn(t, body: #"{"context": {"transactionId": "\#(txID)", "transactionAmount": 1}}"#, with: passkey)
        #expect(approved.status == "SUCCEEDED")
        var token: String?
        #expect(await TestStack.eventually(timeout: .seconds(60)) {
            let r = try? await TestHTTP.send("GET", "\(g)/transaction/v1/tenants/\(t.id)/transactions/\(txID)", headers: ["Authorization": "Bearer \(t.key)"])
            token = r.flatMap { try? decode(TransactionResource.self, $0) }?.tcToken
            return token != nil
        })
        let verified = try await post(
            "\(g)/transaction/v1/tenants/\(t.id)/transactions/\(txID)/tctoken/verify", try json(TCTokenVerifyRequest(tcToken: try #require(token))), key: t.key)
        #expect(verified.status == 200 && (try? decode(TCTokenVerifyResult.self, verified)) == TCTokenVerifyResult(valid: true, alreadyConsumed: false), "\(verified.text)")
    }

    @Test func ceremoniesStartedOnOneReplicaFinishOnTheOther() async throws {
        let replicas = try ContainerStack.replicas
        try #require(replicas.count == 2)
        let t = try await tenant()
        let username = "bo-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await register(username, in: t)
        for (a, b) in [(replicas[0], replicas[1]), (replicas[1], replicas[0])] {
            // WebAuthn authentication: the handle sealed by one replica opens on the other, and
            // the session token it signs verifies with the other replica's published keys.
            let o = try decode(
                AuthenticationOptionsResponse.self,
                try await post("\(a)/v1/tenants/\(t.id)/webauthn/authentications/options", try json(AuthenticationOptionsRequest(username: username))))
            let finish = try await post(
                "\(b)/v1/tenants/\(t.id)/webauthn/authentications",
                try json(AuthenticationFinishRequest(handle: o.handle, credential: try passkey.get(o.publicKey, origin: Self.origin))))
            try #require(finish.status == 200, "\(finish.text)")
            let session = try decode(AuthenticationResult.self, finish)
            let jwks = try await TestHTTP.send("GET", "\(a)/.well-known/jwks.json")
            let verifier = JWTVerifier(
                keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: t.id))
            #expect((try? verifier.verify(session.sessionToken, now: Date())) != nil, "a session token of \(b) does not verify with \(a)'s keys")

            // An adaptive sign-in: challenge on one, verify on the other.
            let s = try await post("\(a)/v1/tenants/\(t.id)/signins", Array(#"{"username": "\#(username)", "context": {"transactionAmount": 1}}"#.utf8))
            try #require(s.status == 201, "\(s.text)")
            let progress = try await step(t, try decode(SignInStarted.self, s).signinId, with: passkey, challengeAt: a, verifyAt: b)
            #expect(progress.status == "SUCCEEDED")
        }
    }

    @Test func theGatewayDoesNotForwardAdminOrInternalRoutes() async throws {
        let g = try ContainerStack.gateway, reg = try ContainerStack.registration, admin = try ContainerStack.adminToken
        // An admin call the gateway refuses, then the same call on the service itself succeeds:
        // the token is good and the gateway's refusal changed nothing.
        let id = "gateway-\(UInt32.random(in: 0...UInt32.max))"
        let body = Array(#"{"displayName":"x","rpId":"localhost","origins":["http://localhost"]}"#.utf8)
        let headers = ["Authorization": "Bearer \(admin)", "Content-Type": "application/json"]
        let refused = try await TestHTTP.send("PUT", "\(g)/registration/v1/admin/tenants/\(id)", headers: headers, body: body)
        #expect(refused.status == 404 && (try? refused.json()["code"] as? String) == "not_found", "\(refused.status) \(refused.text)")
        let direct = try await TestHTTP.send("PUT", "\(reg)/v1/admin/tenants/\(id)", headers: headers, body: body)
        #expect(direct.status == 201, "\(direct.status) \(direct.text)")
        // ...and nothing admin or internal is reachable through the gateway, however spelled.
        for service in Self.services {
            for path in [
                "/\(service)/v1/admin/tenants/x", "/\(service)/v1/internal/anything", "/\(service)//v1/admin/tenants/x",
                "/\(service)/v1/./admin/tenants/x", "/\(service)/v1/x/../admin/tenants/x", "/\(service)/v1/%61dmin/tenants/x",
                "/\(service)/v1/%69nternal/x", "/\(service)/v1/admin", "/\(service)/metrics", "/\(service)/readyz",
            ] {
                for method in ["GET", "PUT", "POST"] {
                    let r = try await TestHTTP.send(
                        method, "\(g)\(path)", headers: ["Authorization": "Bearer \(admin)", "Content-Type": "application/json"],
                        body: method == "GET" ? nil : Array(#"{"displayName":"x","rpId":"localhost","origins":["http://localhost"]}"#.utf8))
                    #expect(r.status == 404, "\(method) \(path) through the gateway: \(r.status)")
                    #expect(r.headers["x-request-id"] != nil)
                }
            }
        }
    }

    /// The console container behind the gateway: its page with its policy, its API refusing a
    /// caller without a session, and its probes not reachable from outside.
    @Test func theGatewayServesTheConsole() async throws {
        let g = try ContainerStack.gateway
        let page = try await TestHTTP.send("GET", "\(g)/console/")
        #expect(page.status == 200 && page.headers["content-security-policy"]?.contains("default-src 'none'") == true, "\(page.status)")
        let session = try await TestHTTP.send("GET", "\(g)/console/api/session")
        #expect(session.status == 401 && (try? session.json()["code"] as? String) == "console_session_required", "\(session.status) \(session.text)")
        let probe = try await TestHTTP.send("GET", "\(g)/console/healthz")
        #expect(probe.status == 404)
    }
}

/// Stopping one of the two authentication replicas while requests flow through the gateway:
/// it drains on SIGTERM and exits 0, no request is lost (the gateway passes a request that
/// could not reach the stopping replica to the other), and the other replica takes over the
/// consumer group's partitions. Run after ContainerSmokeTests (it stops a container).
@Suite(.enabled(if: ContainerStack.enabled && ContainerStack.env["SIGNET_CONTAINER_STOPPABLE_REPLICA"] != nil), .timeLimit(.minutes(3)))
struct ContainerReplicaStopTests {
    static func assigned(_ base: String) async -> Int? {
        guard let r = try? await TestHTTP.send("GET", "\(base)/metrics", timeout: 3), r.status == 200 else { return nil }
        for line in r.text.split(separator: "\n") where line.hasPrefix("signet_kafka_consumer_assigned_partitions{group=\"signet-authentication\"}") {
            return Int(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// Runs podman on a thread of its own (it blocks for as long as the stop takes; the
    /// cooperative pool keeps serving the load).
    static func podman(_ arguments: [String]) async throws -> (Int32, String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/podman")
                process.arguments = arguments
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            }.start()
        }
    }

    static func stop(_ container: String, after delay: Duration, then flag: ManagedAtomicFlag) async throws -> (Int32, String, Duration) {
        try await Task.sleep(for: delay)
        let started = ContinuousClock.now
        let (status, output) = try await podman(["stop", "-t", "30", container])
        flag.set()
        return (status, output, ContinuousClock.now - started)
    }

    @Test func stoppingAReplicaUnderLoadLosesNoRequestAndMovesItsPartitions() async throws {
        let g = try ContainerStack.gateway, replicas = try ContainerStack.replicas
        let container = try ContainerStack.value("SIGNET_CONTAINER_STOPPABLE_REPLICA")
        let smoke = ContainerSmokeTests()
        let t = try await smoke.tenant()
        let username = "cy-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await smoke.register(username, in: t)
        // Both replicas own partitions of the group before the stop.
        var before: [Int] = []
        #expect(await TestStack.eventually(timeout: .seconds(60)) {
            before = [await Self.assigned(replicas[0]) ?? 0, await Self.assigned(replicas[1]) ?? 0]
            return before.allSatisfy { $0 > 0 }
        }, "partitions before: \(before)")
        let total = before.reduce(0, +)

        // Load: sign-in option requests (POSTs) through the gateway, four at a time, while the
        // second replica is stopped.
        let body = try smoke.json(AuthenticationOptionsRequest(username: username))
        let url = "\(g)/authentication/v1/tenants/\(t.id)/webauthn/authentications/options"
        let stopped = ManagedAtomicFlag()
        async let stopping = Self.stop(container, after: .seconds(1), then: stopped)
        let statuses = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var seen: [Int] = []
                    var afterStop = 0
                    while afterStop < 20 {
                        let r = try? await TestHTTP.send("POST", url, headers: ["Content-Type": "application/json"], body: body, timeout: 15)
                        seen.append(r?.status ?? -1)
                        if stopped.isSet { afterStop += 1 }
                    }
                    return seen
                }
            }
            var all: [Int] = []
            for await s in group { all += s }
            return all
        }
        let (stopStatus, stopOutput, took) = try await stopping
        #expect(stopStatus == 0, "podman stop: \(stopOutput)")
        #expect(took < .seconds(30), "the replica took \(took) to stop (SIGKILL after 30 s)")
        let (_, exitCode) = try await Self.podman(["inspect", "--format", "{{.State.ExitCode}}", container])
        #expect(exitCode.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "the replica's exit code on SIGTERM: \(exitCode)")
        #expect(statuses.count >= 80 && statuses.allSatisfy { $0 == 200 }, "statuses other than 200: \(statuses.filter { $0 != 200 })")

        // The remaining replica owns every partition of the group.
        var after = 0
        #expect(await TestStack.eventually(timeout: .seconds(90)) {
            after = await Self.assigned(replicas[0]) ?? 0
            return after == total
        }, "partitions after the stop: \(after) of \(total)")
    }
}

/// A flag set once, read from any task.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
