import Foundation
import Synchronization
import Testing

@testable import Delivery

/// SMSClient against `sinks/sms_sink.py` (standard library only) on a free loopback port. See
/// ``SinkEnvironment`` for how Python is found; under `CI` a missing interpreter fails these
/// tests.
@Suite(
    .serialized, .timeLimit(.minutes(2)),
    .enabled("needs python3 (SIGNET_SINK_PYTHON, .venv or PATH); always runs under CI") {
        SinkEnvironment.shouldRun(SinkEnvironment.smsProbe, suite: "SMSClientIntegrationTests")
    })
struct SMSClientIntegrationTests {
    static let probe = SinkEnvironment.smsProbe

    static func client(
        port: Int, authorization: SMSClient.Authorization = .bearer(token: "sink-token"), timeout: Duration = .seconds(10)
    ) throws -> SMSClient {
        try SMSClient(configuration: .init(
            url: "http://127.0.0.1:\(port)/messages", authorization: authorization, defaultSender: "Signet",
            connectTimeout: .seconds(5), timeout: timeout))
    }

    /// The JSON object a sink file holds.
    static func document(_ url: URL) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
        return try #require(object as? [String: String])
    }

    @Test func deliversARenderedMessageToTheSink() async throws {
        try await SinkProcess.withSink("sms_sink.py", arguments: ["--token", "sink-token"], probe: Self.probe) { sink in
            let values = TemplateValues(code: "482913", minutes: 5, tenant: "ACME", amount: "EUR 120.00", payee: "Zoë's \"Café\"")
            let rendered = try MessageTemplates().render(.transactionOTP, locale: "en-GB", tenant: nil, values: values)
            let receipt = try await Self.client(port: sink.port).send(try rendered.sms(to: "+15551234567"))
            #expect(receipt.statusCode == 202)
            #expect(String(decoding: receipt.body, as: UTF8.self).contains("accepted"))

            let files = try sink.messageFiles(suffix: ".json")
            try #require(files.count == 1, "sink log: \(sink.log)")
            let document = try Self.document(files[0])
            #expect(document == ["to": "+15551234567", "text": rendered.smsText, "sender": "Signet"])
        }
    }

    @Test func basicAuthorizationAndAnExplicitSender() async throws {
        try await SinkProcess.withSink("sms_sink.py", arguments: ["--basic", "signet:pa:ss"], probe: Self.probe) { sink in
            let client = try Self.client(port: sink.port, authorization: .basic(username: "signet", password: "pa:ss"))
            try await client.send(try SMSMessage(to: "+33612345678", text: "123456 est votre code", sender: "ACMEBANK"))
            let document = try Self.document(try #require(sink.messageFiles(suffix: ".json").first))
            #expect(document["sender"] == "ACMEBANK" && document["text"] == "123456 est votre code")
        }
    }

    @Test func retriesThroughTransientGatewayFailures() async throws {
        try await SinkProcess.withSink("sms_sink.py", arguments: ["--fail-first", "2", "--token", "sink-token"], probe: Self.probe) { sink in
            let client = try Self.client(port: sink.port)
            let message = try SMSMessage(to: "+15551234567", text: "482913 is your code")
            let policy = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(20), factor: 2, maximumDelay: .milliseconds(100))
            var failures: [DeliveryError] = []
            let receipt = try await policy.run { _ in
                do {
                    return try await client.send(message)
                } catch let error as DeliveryError {
                    failures.append(error)
                    throw error
                }
            }
            #expect(receipt.statusCode == 202)
            #expect(failures == [DeliveryError(.smsUnavailable, statusCode: 503), DeliveryError(.smsUnavailable, statusCode: 503)])
            #expect(try sink.messageFiles(suffix: ".json").count == 1)
        }
    }

    @Test func aRejectedRequestIsNotRetried() async throws {
        try await SinkProcess.withSink("sms_sink.py", arguments: ["--token", "sink-token"], probe: Self.probe) { sink in
            let client = try Self.client(port: sink.port, authorization: .bearer(token: "wrong-token"))
            let message = try SMSMessage(to: "+15551234567", text: "482913 is your code")
            var attempts = 0
            let error = await #expect(throws: DeliveryError.self) {
                try await RetryPolicy(maximumAttempts: 5, baseDelay: .milliseconds(10)).run { _ in
                    attempts += 1
                    return try await client.send(message)
                }
            }
            #expect(error?.code == .smsRejected && error?.statusCode == 401 && error?.isTransient == false)
            #expect(attempts == 1)
            #expect(try sink.messageFiles(suffix: ".json").isEmpty)
        }
    }

    @Test func aWrongPathIsAPermanentRejection() async throws {
        try await SinkProcess.withSink("sms_sink.py", probe: Self.probe) { sink in
            let client = try SMSClient(configuration: .init(url: "http://127.0.0.1:\(sink.port)/nope"))
            let error = await #expect(throws: DeliveryError.self) { try await client.send(try SMSMessage(to: "+15551234567", text: "x")) }
            #expect(error?.code == .smsRejected && error?.statusCode == 404)
        }
    }
}
