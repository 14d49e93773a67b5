import Crypto
import FIDO
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Schema
import Synchronization
import TestSupport
import Tokens
import JSON

// signet-bench: measurements printed beside their anchors (scripts/bench.sh runs it).
//
//   signet-bench verify [seconds]            in-process WebAuthn assertion verification, one
//                                            thread, and raw Crypto ES256 verification; a
//                                            sign-in's session token signed whole, and the
//                                            ES256 signature alone
//   signet-bench uaf-verify [seconds] [case] in-process FIDO UAF AuthenticationResponse
//                                            verification (p256, p384, p521, secp256k1, or only
//                                            the named case, e.g. for perf), one thread, and raw
//                                            Crypto verification of the same signature
//   signet-bench key-parse [seconds] [case]  building a public key from its parts (and through
//                                            OpenSSL's decoders) beside a verification with it
//                                            (p256, p384, p521, secp256k1, rsa2048, ed25519)
//   signet-bench uaf-breakdown               the CPU time of each step of a P-256 UAF
//                                            verification (ns per call)
//   signet-bench json [seconds]              the HTTP server's JSON coding of sign-in bodies
//                                            beside Foundation's
//   signet-bench locks [seconds]             a per-request critical section behind PlainLock,
//                                            Mutex, and as an actor call, from handler threads
//   signet-bench symmetric [seconds]         random bytes, HMAC-SHA-256 and AES-256-GCM seal
//                                            through Crypto beside OpenSSL's per-call paths
//                                            (ns per call)
//   signet-bench ceremonies URL KEY [seconds] [workers] [rate]
//                                            full sign-in ceremonies over HTTP (options +
//                                            verify) against a running stack; with a rate
//                                            (ceremonies/s, all workers together) each worker
//                                            keeps its share of it, and the latencies are
//                                            measured from each ceremony's planned start;
//                                            SIGNET_BENCH_LATENCY_FILE=path writes each one's
//                                            planned start and latency (ms) there
//   signet-bench serve-healthz PORT [seconds]
//                                            GET /healthz through HTTPServer and HTTPApplication
//                                            as a service serves it, without a stack, for wrk

let args = CommandLine.arguments

func rate(seconds: Double, _ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    var n = 0
    while true {
        for _ in 0..<100 { try body() }
        n += 100
        let elapsed = ContinuousClock.now - start
        let s = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if s >= seconds { return Double(n) / s }
    }
}

func verifyBenchmark(seconds: Double) throws {
    let authenticator = try SoftAuthenticator()
    let options = CreationOptionsJSON(
        rp: .init(id: "localhost", name: "Bench"), user: .init(id: Base64URL.encode(SecureRandom.bytes(32)), name: "u", displayName: "u"),
        challenge: Base64URL.encode(SecureRandom.bytes(32)), pubKeyCredParams: [.init(alg: -7)], timeout: nil, excludeCredentials: [],
        authenticatorSelection: nil, hints: [], attestation: "none", extensions: nil)
    let registration = authenticator.create(options, origin: "http://localhost:8080")
    let rp = RelyingParty(id: "localhost", origins: ["http://localhost:8080"])
    let verifiedRegistration = try RegistrationVerifier(relyingParty: rp, requiresUserVerification: false).verify(
        RegistrationResponse(
            clientDataJSON: Base64URL.decode(registration.response.clientDataJSON)!,
            attestationObject: Base64URL.decode(registration.response.attestationObject)!),
        expectedChallenge: Base64URL.decode(options.challenge)!)
    let challenge = SecureRandom.bytes(32)
    let request = RequestOptionsJSON(challenge: Base64URL.encode(challenge), timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: [])
    let assertion = try authenticator.get(request, origin: "http://localhost:8080")
    let response = AuthenticationResponse(
        id: assertion.id, rawID: authenticator.credentialID, clientDataJSON: Base64URL.decode(assertion.response.clientDataJSON)!,
        authenticatorData: Base64URL.decode(assertion.response.authenticatorData)!, signature: Base64URL.decode(assertion.response.signature)!,
        userHandle: Base64URL.decode(assertion.response.userHandle ?? ""))
    let record = CredentialRecord(
        id: authenticator.credentialID, parsedPublicKey: verifiedRegistration.credentialPublicKey, signCount: 0, backupEligible: true,
        backupState: true, userHandle: authenticator.userHandle)
    let verifier = AssertionVerifier(relyingParty: rp, requiresUserVerification: false)
    _ = try verifier.verify(response, expectedChallenge: challenge, credential: record)
    let full = try rate(seconds: seconds) { _ = try verifier.verify(response, expectedChallenge: challenge, credential: record) }
    let key = verifiedRegistration.credentialPublicKey.publicKey
    let message = response.authenticatorData + SHA256.hash(response.clientDataJSON)
    let raw = rate(seconds: seconds) { _ = key.verify(signature: response.signature, message: message, algorithm: .es256) }
    print(String(format: "assertion_verify_per_s %.0f", full))
    print(String(format: "crypto_es256_verify_per_s %.0f", raw))
    // The other ECDSA operation of a sign-in: its session token, the claims a plain WebAuthn
    // sign-in's token carries (SessionIssuer), signed whole; and the signature alone.
    let signer = try JWTSigner(privateKey: try PrivateKey.generateP256())
    let now = Date()
    let claims = JWTClaims(
        issuer: "https://signet.example/authentication", subject: "bench-user-0001", audience: ["demo"], expiresAt: now.addingTimeInterval(3600),
        issuedAt: now, id: SecureRandom.token(byteCount: 16),
        extra: [
            "auth_time": .int(Int64(now.timeIntervalSince1970)), "amr": .array(["hwk", "user", "mfa"].map(JSONValue.string)),
            "sid": .string(SecureRandom.token(byteCount: 16)), "cid": .string(Base64URL.encode(authenticator.credentialID)),
        ])
    let token = try signer.sign(claims)
    try JWS(compact: token).verify(with: signer.verificationKey)
    let tokens = try rate(seconds: seconds) { _ = try signer.sign(claims) }
    let privateKey = try PrivateKey.generateP256()
    let input = Array(token.utf8.prefix(while: { $0 != UInt8(ascii: ".") }))
    let signatures = try rate(seconds: seconds) { _ = try privateKey.sign(input, algorithm: .es256) }
    print(String(format: "session_token_sign_per_s %.0f", tokens))
    print(String(format: "crypto_es256_sign_per_s %.0f", signatures))
}

/// One worker: its own credential, sequential ceremonies.
/// What each measured iteration does.
enum SignInKind {
    /// Plain WebAuthn: options + finish (2 requests).
    case ceremony
    /// Adaptive flow under the tenant's rules (the demo tenant's default, [["fido2"]]): start +
    /// fido2 challenge + fido2 verify (3 requests), ending in a session with a refresh token.
    case flow
}

func ceremonies(base: String, key: String, seconds: Double, workers: Int, kind: SignInKind = .ceremony, rate: Double? = nil) async throws {
    let reg = "\(base)/registration/v1/tenants/demo"
    let auth = "\(base)/authentication/v1/tenants/demo"
    let origin = "http://localhost:8080"
    let session = URLSession(configuration: .ephemeral)
    func post<T: Encodable, R: Decodable>(_ url: String, _ body: T, key: String? = nil, as: R.Type) async throws -> R {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONEncoder().encode(body)
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode ?? 0 < 300 else {
            throw NSError(domain: "bench", code: (response as? HTTPURLResponse)?.statusCode ?? 0, userInfo: [NSLocalizedDescriptionKey: String(decoding: data, as: UTF8.self)])
        }
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return try d.decode(R.self, from: data)
    }
    var authenticators: [(SoftAuthenticator, String)] = []
    for i in 0..<workers {
        let a = try SoftAuthenticator()
        let username = "bench-\(UInt32.random(in: 0...UInt32.max))-\(i)"
        let options = try await post("\(reg)/webauthn/registrations/options", RegistrationOptionsRequest(username: username), key: key, as: RegistrationOptionsResponse.self)
        _ = try await post("\(reg)/webauthn/registrations", RegistrationFinishRequest(handle: options.handle, credential: a.create(options.publicKey, origin: origin)), key: key, as: CredentialResource.self)
        authenticators.append((a, username))
    }
    // Wait until every credential has reached the authentication service (behind whatever
    // backlog of events the consumers still have).
    let ready = ContinuousClock.now + .seconds(180)
    for (_, username) in authenticators {
        while true {
            let o = try await post("\(auth)/webauthn/authentications/options", AuthenticationOptionsRequest(username: username), as: AuthenticationOptionsResponse.self)
            if !o.publicKey.allowCredentials.isEmpty { break }
            guard ContinuousClock.now < ready else { throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "credentials did not propagate"]) }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
    // The measured loop: one OS thread per worker, each with its own keep-alive connection
    // and a blocking client (see BlockingHTTPClient for why not URLSession).
    // SIGNET_BENCH_SERVICE_URL: the measured loop goes to the authentication service itself
    // (e.g. http://127.0.0.1:8082), not through the gateway; set-up still goes through `base`.
    let direct = ProcessInfo.processInfo.environment["SIGNET_BENCH_SERVICE_URL"].flatMap { URL(string: $0) }
    guard let url = direct ?? URL(string: base), let host = url.host, let port = url.port else { throw NSError(domain: "bench", code: 2) }
    let authPath = direct != nil ? "\(url.path)/v1/tenants/demo" : "\(url.path)/authentication/v1/tenants/demo"
    let totals = Mutex((ok: 0, failed: 0))
    // Each ceremony's planned start (ms from the loop's start) and latency (ms).
    let timeline = Mutex<[(start: Double, latency: Double)]>([])
    // SIGNET_BENCH_LATENCY_FILE: the timeline written there, one line each, to see whether the
    // slow ones come together (a stall of the stack) or apart (waits for a CPU).
    let latencyFile = ProcessInfo.processInfo.environment["SIGNET_BENCH_LATENCY_FILE"].flatMap { $0.isEmpty ? nil : $0 }
    @Sendable func milliseconds(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }
    let done = DispatchGroup()
    let cpuBefore = ProcessCPU.snapshot()
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    let start = ContinuousClock.now
    let startWallClock = Date()
    // Paced: worker i plans its ceremonies every `interval`, offset by i/workers of it. A
    // ceremony's latency runs from its planned start, so time spent behind schedule counts
    // (no coordinated omission).
    let interval: Duration? = rate.map { .nanoseconds(Int64(Double(workers) / max($0, 0.001) * 1e9)) }
    for (index, (a, username)) in authenticators.enumerated() {
        let worker = UncheckedBox((a, username))
        done.enter()
        Thread.detachNewThread {
            let (a, username) = worker.value
            var ok = 0
            var failed = 0
            var mine: [(start: Double, latency: Double)] = []
            mine.reserveCapacity(4096)
            defer {
                totals.withLock { $0 = ($0.ok + ok, $0.failed + failed) }
                timeline.withLock { $0.append(contentsOf: mine) }
                done.leave()
            }
            var planned = start + (interval.map { $0 * Double(index) / Double(workers) } ?? .zero)
            guard let client = try? BlockingHTTPClient(host: host, port: UInt16(port)) else {
                failed += 1
                return
            }
            let encoder = JSONEncoder()
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let optionsBody = (try? encoder.encode(AuthenticationOptionsRequest(username: username))).map(Array.init) ?? []
            let startBody = (try? encoder.encode(SignInStartRequest(username: username, context: ["transactionAmount": .int(10)]))).map(Array.init) ?? []
            func expect(_ r: (status: Int, body: [UInt8]), _ status: Int, _ what: String) throws {
                guard r.status == status else { throw BlockingHTTPClient.Failure(description: "\(what) \(r.status): \(String(decoding: r.body, as: UTF8.self))") }
            }
            while ContinuousClock.now < deadline {
                if interval != nil {
                    let now = ContinuousClock.now
                    if planned > now { Thread.sleep(forTimeInterval: Double((planned - now).components.attoseconds) / 1e18 + Double((planned - now).components.seconds)) }
                    if planned >= deadline { break }
                } else {
                    planned = ContinuousClock.now
                }
                defer { if let interval { planned += interval } }
                do {
                    switch kind {
                    case .ceremony:
                        // The client side kept lean (like pgbench's): the options read with the
                        // strict parser, the finish body written directly; the server does all
                        // of its work either way.
                        let o = try client.post("\(authPath)/webauthn/authentications/options", body: optionsBody)
                        try expect(o, 200, "options")
                        let (handle, request) = try leanOptions(o.body)
                        let finish = leanFinishBody(handle: handle, credential: try a.get(request, origin: origin))
                        try expect(try client.post("\(authPath)/webauthn/authentications", body: finish), 200, "finish")
                    case .flow:
                        let started = try client.post("\(authPath)/signins", body: startBody)
                        try expect(started, 201, "start")
                        let signin = try decoder.decode(SignInStarted.self, from: Data(started.body))
                        let steps = "\(authPath)/signins/\(signin.signinId)/methods/fido2"
                        let c = try client.post("\(steps)/challenge", body: Array("{}".utf8))
                        try expect(c, 200, "challenge")
                        let challenge = try decoder.decode(BenchFIDO2Challenge.self, from: Data(c.body))
                        let verify = FIDO2VerifyRequest(credential: try a.get(challenge.publicKey, origin: origin))
                        let v = try client.post("\(steps)/verify", body: Array(try encoder.encode(verify)))
                        try expect(v, 200, "verify")
                        guard try decoder.decode(SignInProgress.self, from: Data(v.body)).status == "SUCCEEDED" else {
                            throw BlockingHTTPClient.Failure(description: "the flow did not succeed")
                        }
                    }
                    ok += 1
                    mine.append((start: milliseconds(planned - start), latency: milliseconds(ContinuousClock.now - planned)))
                } catch {
                    failed += 1
                    if failed == 1 { FileHandle.standardError.write(Data("sign-in failed: \(error)\n".utf8)) }
                }
            }
        }
    }
    done.wait()
    let cpuAfter = ProcessCPU.snapshot()
    let counts = totals.withLock { ($0.ok, $0.failed) }
    let elapsed = ContinuousClock.now - start
    let s = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let label = kind == .ceremony ? "ceremonies" : "flows"
    print(String(format: "\(label)_per_s %.1f", Double(counts.0) / s))
    print("\(label)_failed \(counts.1)")
    // Latency percentiles (nearest rank), in milliseconds.
    let recorded = timeline.withLock { $0 }
    let sorted = recorded.map(\.latency).sorted()
    func percentile(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
    }
    print(String(format: "latency_ms p50 %.2f  p90 %.2f  p99 %.2f  max %.2f", percentile(0.5), percentile(0.9), percentile(0.99), sorted.last ?? 0))
    // Paced: in how many 100 ms windows of planned start the slowest 1 % lie. Few windows: the
    // stack stalled now and then and everything in flight waited (README, "Tail latency");
    // about as many windows as ceremonies: waits spread over the run, such as for a CPU.
    if interval != nil, !sorted.isEmpty {
        let threshold = percentile(0.99)
        let slow = recorded.filter { $0.latency >= threshold }
        let windows = Set(slow.map { Int($0.start / 100) })
        print("latency_tail_windows \(windows.count) slow \(slow.count)")
    }
    if let latencyFile {
        let lines = String(format: "# loop started at %.3f (Unix time, s); then planned start and latency, ms\n", startWallClock.timeIntervalSince1970)
            + recorded.sorted { $0.start < $1.start }.map { String(format: "%.3f %.3f\n", $0.start, $0.latency) }.joined()
        if !FileManager.default.createFile(atPath: latencyFile, contents: Data(lines.utf8)) {
            FileHandle.standardError.write(Data("could not write \(latencyFile)\n".utf8))
        }
    }
    // Where the CPU went during the measured loop: each part of the stack, and this client.
    let parts = cpuBefore.millisecondsPerUnit(until: cpuAfter, units: counts.0)
    print("cpu_ms_per_\(kind == .ceremony ? "ceremony" : "flow") " + parts.map { "\($0.part) " + String(format: "%.3f", $0.ms) }.joined(separator: "  ")
        + String(format: "  total %.3f", parts.reduce(0) { $0 + $1.ms }))
    // Context switches per unit of work in each service process (its threads together: every
    // hand-off and wake-up is one), and each one's threads.
    let switches = cpuBefore.switchesPerUnit(until: cpuAfter, units: counts.0)
    print("context_switches_per_\(kind == .ceremony ? "ceremony" : "flow") " + switches.map { "\($0.part) " + String(format: "%.2f", $0.switches) }.joined(separator: "  "))
    print("threads " + switches.map { "\($0.part) \($0.threads)" }.joined(separator: "  "))
}

/// The handle and request options of an options response, read with the strict parser.
func leanOptions(_ body: [UInt8]) throws -> (handle: String, options: RequestOptionsJSON) {
    let json = try JSONParser.parse(body)
    guard let handle = json["handle"]?.stringValue, let publicKey = json["publicKey"], let challenge = publicKey["challenge"]?.stringValue,
        let rpID = publicKey["rpId"]?.stringValue
    else { throw BlockingHTTPClient.Failure(description: "unexpected options response") }
    return (handle, RequestOptionsJSON(
        challenge: challenge, timeout: nil, rpId: rpID, allowCredentials: [],
        userVerification: publicKey["userVerification"]?.stringValue ?? "preferred", hints: []))
}

/// The finish request's JSON, as `AuthenticationFinishRequest` encodes it, written by
/// `JSONValue`'s writer.
func leanFinishBody(handle: String, credential c: AuthenticationResponseJSON) -> [UInt8] {
    var response: [String: JSONValue] = [
        "clientDataJSON": .string(c.response.clientDataJSON), "authenticatorData": .string(c.response.authenticatorData),
        "signature": .string(c.response.signature),
    ]
    if let userHandle = c.response.userHandle { response["userHandle"] = .string(userHandle) }
    let body: JSONValue = [
        "handle": .string(handle),
        "credential": ["id": .string(c.id), "rawId": .string(c.rawId), "type": "public-key", "response": .object(response), "clientExtensionResults": [:]],
    ]
    return Array(body.jsonString.utf8)
}

/// `…/methods/fido2/challenge` response.
struct BenchFIDO2Challenge: Decodable {
    var publicKey: RequestOptionsJSON
}

/// Hands a value to a thread that alone uses it afterwards.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

switch args.dropFirst().first {
case "verify":
    try verifyBenchmark(seconds: Double(args.dropFirst(2).first ?? "5") ?? 5)
case "uaf-breakdown":
    try uafBreakdown()
case "key-parse":
    try keyParseBenchmark(seconds: Double(args.dropFirst(2).first ?? "3") ?? 3, only: args.dropFirst(3).first)
case "uaf-verify":
    try uafVerifyBenchmark(seconds: Double(args.dropFirst(2).first ?? "5") ?? 5, only: args.dropFirst(3).first)
case "json":
    try jsonBenchmark(seconds: Double(args.dropFirst(2).first ?? "2") ?? 2)
case "symmetric":
    try symmetricBenchmark(seconds: Double(args.dropFirst(2).first ?? "3") ?? 3)
case "locks":
    await lockBenchmark(seconds: Double(args.dropFirst(2).first ?? "2") ?? 2)
case "rules":
    try rulesBenchmark(seconds: Double(args.dropFirst(2).first ?? "3") ?? 3)
case "ceremonies":
    guard args.count >= 4 else { print("usage: signet-bench ceremonies BASE_URL RP_KEY [seconds] [workers] [rate]"); exit(2) }
    try await ceremonies(
        base: args[2], key: args[3], seconds: Double(args.dropFirst(4).first ?? "10") ?? 10,
        workers: Int(args.dropFirst(5).first ?? "16") ?? 16, rate: args.dropFirst(6).first.flatMap(Double.init))
case "serve-healthz":
    guard args.count >= 3, let port = Int(args[2]) else { print("usage: signet-bench serve-healthz PORT [seconds]"); exit(2) }
    try await serveHealthz(port: port, seconds: Double(args.dropFirst(3).first ?? "60") ?? 60)
case "flows":
    guard args.count >= 4 else { print("usage: signet-bench flows BASE_URL RP_KEY [seconds] [workers]"); exit(2) }
    try await ceremonies(
        base: args[2], key: args[3], seconds: Double(args.dropFirst(4).first ?? "10") ?? 10,
        workers: Int(args.dropFirst(5).first ?? "16") ?? 16, kind: .flow)
default:
    print("usage: signet-bench verify [seconds] | uaf-verify [seconds] [case] | key-parse [seconds] [case] | uaf-breakdown | rules [seconds] | locks [seconds] | symmetric [seconds] | json [seconds] | ceremonies|flows BASE_URL RP_KEY [seconds] [workers] [rate]")
    exit(2)
}
