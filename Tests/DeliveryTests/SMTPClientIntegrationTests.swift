import Foundation
import Testing

@testable import Delivery

/// SMTPClient against `sinks/smtp_sink.py` (aiosmtpd) on a free loopback port. See ``SinkEnvironment`` for how Python is found; under
/// `CI` a missing interpreter or aiosmtpd fails these tests.
@Suite(
    .serialized, .timeLimit(.minutes(2)),
    .enabled("needs python3 with aiosmtpd (SIGNET_SINK_PYTHON or .venv); always runs under CI") {
        SinkEnvironment.shouldRun(SinkEnvironment.smtpProbe, suite: "SMTPClientIntegrationTests")
    })
struct SMTPClientIntegrationTests {
    static let probe = SinkEnvironment.smtpProbe

    static func client(port: Int, _ configure: (inout SMTPClient.Configuration) -> Void = { _ in }) throws -> SMTPClient {
        var configuration = SMTPClient.Configuration(url: "smtp://127.0.0.1:\(port)", connectTimeout: .seconds(5), timeout: .seconds(20))
        configure(&configuration)
        return try SMTPClient(configuration: configuration)
    }

    static func otpMessage(to recipient: String = "alice@example.com") throws -> EmailMessage {
        let values = TemplateValues(code: "482913", minutes: 5, tenant: "Société Générale", amount: "EUR 1 250,00", payee: "Café & Cie")
        let rendered = try MessageTemplates().render(.transactionOTP, locale: "fr-CA", tenant: "acme", values: values)
        return try rendered.email(from: EmailAddress("no-reply@signet.example", displayName: "Signet"), to: EmailAddress(recipient))
    }

    @Test func deliversARenderedMessageToTheSink() async throws {
        try await SinkProcess.withSink("smtp_sink.py", probe: Self.probe) { sink in
            let message = try Self.otpMessage()
            let receipt = try await Self.client(port: sink.port).send(message)
            #expect(receipt.replyCode == 250)

            let files = try sink.messageFiles(suffix: ".eml")
            try #require(files.count == 1, "sink log: \(sink.log)")
            let raw = try String(contentsOf: files[0], encoding: .utf8)
            #expect(MIMEDecoding.header("Message-ID", in: raw) == receipt.messageID)
            #expect(MIMEDecoding.header("From", in: raw) == "Signet <no-reply@signet.example>")
            #expect(MIMEDecoding.header("To", in: raw) == "alice@example.com")
            #expect(MIMEDecoding.header("MIME-Version", in: raw) == "1.0")
            let subject = try #require(MIMEDecoding.header("Subject", in: raw))
            #expect(MIMEDecoding.headerValue(subject) == message.subject)
            #expect(subject.hasPrefix("=?utf-8?B?"))

            // The text part, decoded, is the rendered text with CRLF line breaks.
            let boundary = EmailMessage.boundary(for: receipt.messageID)
            let parts = raw.components(separatedBy: "--\(boundary)")
            try #require(parts.count == 4)
            let textPart = parts[1].components(separatedBy: "\r\n\r\n")
            #expect(textPart[0].contains("Content-Type: text/plain; charset=utf-8"))
            let text = MIMEDecoding.quotedPrintable(textPart.dropFirst().joined(separator: "\r\n\r\n"))
            #expect(text.contains("482913") && text.contains("EUR 1 250,00") && text.contains("Café & Cie"))
            #expect(MIMEDecoding.quotedPrintable(parts[2]).contains("Café &amp; Cie"))
        }
    }

    @Test func deliversToEveryRecipientAndKeepsLeadingDots() async throws {
        try await SinkProcess.withSink("smtp_sink.py", probe: Self.probe) { sink in
            let message = try EmailMessage(
                from: EmailAddress("no-reply@signet.example"),
                to: [EmailAddress("a@example.com"), EmailAddress("b@example.org")],
                subject: "Dots", textBody: ".\n..two\n.")
            try await Self.client(port: sink.port).send(message)
            let raw = try String(contentsOf: try #require(sink.messageFiles(suffix: ".eml").first), encoding: .utf8)
            let body = try #require(raw.components(separatedBy: "\r\n\r\n").last)
            #expect(MIMEDecoding.quotedPrintable(body) == ".\r\n..two\r\n.\r\n")
            #expect(MIMEDecoding.header("To", in: raw) == "a@example.com, b@example.org")
        }
    }

    @Test func aRefusedRecipientIsAPermanentRejection() async throws {
        try await SinkProcess.withSink("smtp_sink.py", arguments: ["--reject-domain", "reject.invalid"], probe: Self.probe) { sink in
            let error = await #expect(throws: DeliveryError.self) {
                try await Self.client(port: sink.port).send(try Self.otpMessage(to: "bob@reject.invalid"))
            }
            #expect(error?.code == .smtpRejected)
            #expect(error?.statusCode == 550)
            #expect(error?.isTransient == false)
            #expect(error?.description.contains("bob") == false)
            let files = try sink.messageFiles(suffix: ".eml")
            #expect(files.isEmpty)
        }
    }

    @Test func authenticatesWithUsernameAndPassword() async throws {
        try await SinkProcess.withSink("smtp_sink.py", arguments: ["--auth", "signet:s3cret"], probe: Self.probe) { sink in
            let good = try Self.client(port: sink.port) { $0.username = "signet"; $0.password = "s3cret" }
            try await good.send(try Self.otpMessage())
            #expect(try sink.messageFiles(suffix: ".eml").count == 1)

            let bad = try Self.client(port: sink.port) { $0.username = "signet"; $0.password = "wrong" }
            let refused = await #expect(throws: DeliveryError.self) { try await bad.send(try Self.otpMessage()) }
            #expect(refused?.code == .smtpAuthFailed)

            let anonymous = try Self.client(port: sink.port)
            let unauthenticated = await #expect(throws: DeliveryError.self) { try await anonymous.send(try Self.otpMessage()) }
            #expect(unauthenticated?.code == .smtpAuthFailed)
            #expect(try sink.messageFiles(suffix: ".eml").count == 1)
        }
    }

    @Test func requiredSTARTTLSRefusesAServerWithoutIt() async throws {
        try await SinkProcess.withSink("smtp_sink.py", probe: Self.probe) { sink in
            let client = try Self.client(port: sink.port) { $0.requireSTARTTLS = true }
            let error = await #expect(throws: DeliveryError.self) { try await client.send(try Self.otpMessage()) }
            #expect(error?.code == .smtpTLSFailed)
            #expect(try sink.messageFiles(suffix: ".eml").isEmpty)
        }
    }

    @Test func requiredSTARTTLSUpgradesAndVerifiesTheServer() async throws {
        guard let tls = try TestCertificate.make() else {
            if SinkEnvironment.isCI { Issue.record("no openssl command on PATH (Debian package openssl) to make a test certificate") }
            return
        }
        defer { tls.remove() }
        let arguments = ["--tls-cert", tls.certificate.path, "--tls-key", tls.key.path, "--auth", "signet:s3cret"]
        try await SinkProcess.withSink("smtp_sink.py", arguments: arguments, probe: Self.probe) { sink in
            let trusting = try Self.client(port: sink.port) {
                $0.requireSTARTTLS = true
                $0.caBundlePath = tls.certificate.path
                $0.username = "signet"
                $0.password = "s3cret"
            }
            let receipt = try await trusting.send(try Self.otpMessage())
            #expect(receipt.replyCode == 250)

            // The system's CAs do not know the sink's certificate: refused before AUTH.
            let untrusting = try Self.client(port: sink.port) {
                $0.requireSTARTTLS = true
                $0.username = "signet"
                $0.password = "s3cret"
            }
            let error = await #expect(throws: DeliveryError.self) { try await untrusting.send(try Self.otpMessage()) }
            #expect(error?.code == .smtpTLSFailed)
            let files = try sink.messageFiles(suffix: ".eml")
            #expect(files.count == 1, "sink log: \(sink.log)")
        }
    }
}
