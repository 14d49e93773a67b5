import FIDO
import Foundation
import Platform
import Schema
import Testing
import TestSupport

/// One sign-in followed as one trace: through the gateway into the authentication service, out
/// through its outbox and Kafka into the oob service's delivery consumer, from there over an
/// internal call into the pii service, and from the final step's event into the registration
/// service's consumer. Spans come from the OTLP sink the stack runs (Tools/Sinks/otlp_sink.py),
/// to which every service exports (`SIGNET_OTLP_ENDPOINT`).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct TraceStackTests {
    static let gateway = "http://127.0.0.1:8080"
    static let sink = "http://127.0.0.1:4318"
    let adaptive = AdaptiveSignInStackTests()
    let methods = NonFIDOMethodsStackTests()

    /// A span as the sink reports it.
    struct Span: Decodable {
        let service: String?
        let traceId: String
        let spanId: String
        let parentSpanId: String?
        let name: String
        let kind: Int
        let start: UInt64
        let end: UInt64
        let error: Bool
    }

    static func spans(of traceID: String) async -> [Span] {
        guard let r = try? await TestHTTP.send("GET", "\(sink)/v1/spans?traceId=\(traceID)", timeout: 5), r.status == 200 else { return [] }
        return (try? JSONDecoder().decode([Span].self, from: Data(r.body))) ?? []
    }

    /// What the sink holds of `traceID` once `complete` says it is all there (spans arrive in
    /// batches, each service on its own schedule).
    static func trace(_ traceID: String, until complete: ([Span]) -> Bool) async -> [Span] {
        var spans: [Span] = []
        _ = await TestStack.eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            spans = await Self.spans(of: traceID)
            return complete(spans)
        }
        return spans
    }

    func send(_ method: String, _ path: String, traceparent: String, body: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send(
            method, "\(Self.gateway)/authentication\(path)", headers: ["Content-Type": "application/json", "traceparent": traceparent, "tracestate": "signet-test=1"],
            body: Array(body.utf8))
    }

    @Test func oneSignInIsOneTraceAcrossTheGatewayTheServicesAndKafka() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "tracy-\(UInt32.random(in: 0...UInt32.max))"
        let email = "tracy.\(UInt32.random(in: 0...UInt32.max))@example.org"
        let passkey = try await adaptive.register(username, in: t)
        let methodsURL = "\(AdaptiveSignInStackTests.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let enrolled = Date()
        let created = try await methods.post(methodsURL, #"{"type": "email_otp", "email": "\#(email)"}"#, token: t.key)
        try #require(created.status == 201, "\(created.text)")
        let method = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let confirmCode = try #require(await NonFIDOMethodsStackTests.emailedCode(to: email, after: enrolled), "no confirmation e-mail")
        let confirmed = try await methods.post("\(methodsURL)/\(method.methodId)/confirm", #"{"code": "\#(confirmCode)"}"#, token: t.key)
        try #require(confirmed.status == 200, "\(confirmed.text)")
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "both", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "email_otp"]]}]}"#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.sequences == [["fido2", "email_otp"]] })

        // The client's own span: every request of the sign-in is sent as its child.
        let traceID = TraceContext.newTraceID()
        let root = TraceContext.newSpanID()
        let traceparent = "00-\(traceID)-\(root)-01"
        let started = try await send(
            "POST", "/v1/tenants/\(t.id)/signins", traceparent: traceparent,
            body: #"{"username": "\#(username)", "context": {"transactionAmount": 10}}"#)
        try #require(started.status == 201, "\(started.text)")
        let signin = try AdaptiveSignInStackTests.decode(SignInStarted.self, started).signinId
        let fido2 = "/v1/tenants/\(t.id)/signins/\(signin)/methods/fido2"
        let challenge = try await send("POST", "\(fido2)/challenge", traceparent: traceparent, body: "{}")
        try #require(challenge.status == 200, "\(challenge.text)")
        let options = try #require(try challenge.json()["publicKey"] as? [String: Any])
        let request = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: options))
        let assertion = String(decoding: try JSONEncoder().encode(FIDO2VerifyRequest(credential: try passkey.get(request, origin: AdaptiveSignInStackTests.origin))), as: UTF8.self)
        let first = try await send("POST", "\(fido2)/verify", traceparent: traceparent, body: assertion)
        try #require(first.status == 200, "\(first.text)")
        let otp = "/v1/tenants/\(t.id)/signins/\(signin)/methods/email_otp"
        let asked = Date()
        let otpChallenge = try await send("POST", "\(otp)/challenge", traceparent: traceparent, body: "{}")
        try #require(otpChallenge.status == 200, "\(otpChallenge.text)")
        let code = try #require(await NonFIDOMethodsStackTests.emailedCode(to: email, after: asked, excluding: [confirmCode]), "no sign-in code")
        let done = try await send("POST", "\(otp)/verify", traceparent: traceparent, body: #"{"code": "\#(code)"}"#)
        try #require(done.status == 200, "\(done.text)")
        #expect(try AdaptiveSignInStackTests.decode(SignInProgress.self, done).status == "SUCCEEDED")

        let delivery = "signet.oob.delivery.requested.v1"
        let succeeded = "signet.authentication.succeeded.v1"
        /// The spans named `name` of `service` whose parent is one of `parents`.
        func children(of parents: [Span], service: String, named name: String, in spans: [Span]) -> [Span] {
            let ids = Set(parents.map(\.spanId))
            return spans.filter { $0.service == service && $0.name == name && $0.parentSpanId.map(ids.contains) == true }
        }
        let spans = await Self.trace(traceID) { spans in
            let server = spans.filter { $0.service == "signet-authentication" && $0.kind == 2 }
            let produced = spans.filter { $0.kind == 4 }
            let consumed = spans.filter { $0.kind == 5 }
            return server.count >= 5 && produced.contains { $0.name == "\(delivery) publish" } && produced.contains { $0.name == "\(succeeded) publish" }
                && consumed.contains { $0.service == "signet-oob" } && consumed.contains { $0.service == "signet-registration" }
                && spans.contains { $0.service == "signet-pii" && $0.kind == 2 }
        }
        #expect(spans.allSatisfy { $0.traceId == traceID && $0.end >= $0.start })

        // gateway → authentication: each request's server span is a child of the client's span.
        let server = spans.filter { $0.service == "signet-authentication" && $0.kind == 2 && $0.parentSpanId == root }
        #expect(Set(server.map(\.name)) == [
            "POST /v1/tenants/{tenant}/signins", "POST /v1/tenants/{tenant}/signins/{signinId}/methods/{method}/challenge",
            "POST /v1/tenants/{tenant}/signins/{signinId}/methods/{method}/verify",
        ], "\(spans.map(\.name))")
        #expect(server.count == 5 && server.allSatisfy { !$0.error })

        // authentication → outbox → Kafka → oob: the delivery request's producer span is a child
        // of the e-mail challenge's server span, the oob consumer's span a child of it.
        let deliveryPublished = children(of: server, service: "signet-authentication", named: "\(delivery) publish", in: spans)
        #expect(deliveryPublished.count == 1, "\(spans.map { ($0.service ?? "", $0.name) })")
        let deliveryConsumed = children(of: deliveryPublished, service: "signet-oob", named: "\(delivery) process", in: spans)
        #expect(deliveryConsumed.count == 1 && deliveryConsumed.allSatisfy { $0.kind == 5 })
        // oob → pii: the consumer's internal call (the address from the vault) and its server span.
        let call = children(of: deliveryConsumed, service: "signet-oob", named: "POST internal", in: spans)
        #expect(call.count >= 1 && call.allSatisfy { $0.kind == 3 })
        let vault = spans.filter { $0.service == "signet-pii" && $0.kind == 2 && call.map(\.spanId).contains($0.parentSpanId ?? "") }
        #expect(vault.map(\.name).contains("POST /v1/internal/tenants/{tenant}/pii/{ref}/read"), "\(vault.map(\.name))")

        // The last step's success event: produced by the verify request, consumed by registration.
        let succeededPublished = children(of: server, service: "signet-authentication", named: "\(succeeded) publish", in: spans)
        #expect(succeededPublished.count == 1)
        let succeededConsumed = children(of: succeededPublished, service: "signet-registration", named: "\(succeeded) process", in: spans)
        #expect(succeededConsumed.count == 1)

        // No personal data in the spans: not the username, not the address, not the code.
        let raw = await TestHTTP.sendText("\(Self.sink)/v1/spans?traceId=\(traceID)")
        #expect(!raw.isEmpty && !raw.contains(username) && !raw.contains(email) && !raw.contains(code))

        // The request's log lines carry the trace id.
        let log = (try? String(contentsOfFile: "\(TestStack.dataDir)/logs/authentication.log", encoding: .utf8)) ?? ""
        #expect(log.contains(#""trace_id":"\#(traceID)""#))
        // So do lines a consumer's handler writes with the service's own logger (oob's delivery).
        let oobLog = (try? String(contentsOfFile: "\(TestStack.dataDir)/logs/oob.log", encoding: .utf8)) ?? ""
        #expect(oobLog.split(separator: "\n").contains { $0.contains(#""msg":"delivered""#) && $0.contains(#""trace_id":"\#(traceID)""#) })

        // Exported, nothing dropped (the counters are in /metrics from start-up).
        let metrics = (try await TestHTTP.send("GET", "\(AdaptiveSignInStackTests.authentication)/metrics")).text.split(separator: "\n")
        let exported = metrics.first { $0.hasPrefix("signet_trace_spans_exported_total ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        #expect((exported ?? 0) >= 5, "\(String(describing: exported))")
        #expect(metrics.contains(#"signet_trace_spans_dropped_total{reason="queue_full"} 0"#))
        #expect(metrics.contains(#"signet_trace_spans_dropped_total{reason="export_failed"} 0"#))
    }

    @Test func theGatewayStartsATraceWhenTheClientSendsNone() async throws {
        try TestStack.require()
        // No traceparent and no X-Request-Id: the gateway's trace id is its request id.
        let r = try await TestHTTP.send("GET", "\(Self.gateway)/authentication/v1/tenants/demo")
        #expect(r.status == 200)
        let requestID = try #require(r.headers["x-request-id"])
        #expect(requestID.utf8.count == 32)
        let spans = await Self.trace(requestID) { $0.contains { $0.service == "signet-authentication" } }
        let span = try #require(spans.first { $0.service == "signet-authentication" })
        #expect(span.name == "GET /v1/tenants/{tenant}" && span.kind == 2)
        // Its parent is the gateway's span: the last 16 digits of the id.
        #expect(span.parentSpanId == String(requestID.suffix(16)))

        // A malformed traceparent is replaced by a new trace at the gateway.
        let bad = try await TestHTTP.send("GET", "\(Self.gateway)/authentication/v1/tenants/demo", headers: ["traceparent": "00-not-a-trace-01"])
        let badID = try #require(bad.headers["x-request-id"])
        #expect(await Self.trace(badID) { !$0.isEmpty }.count == 1)
    }
}

extension TestHTTP {
    /// The body of a GET, or "" when it fails.
    static func sendText(_ url: String) async -> String {
        (try? await send("GET", url, timeout: 5))?.text ?? ""
    }
}
