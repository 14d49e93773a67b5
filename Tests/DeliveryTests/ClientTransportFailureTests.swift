import Testing

@testable import Delivery

/// Both clients against loopback sockets that refuse connections or accept them and never
/// answer: connect failures, timeouts and cancellation of a blocked libcurl call. Needs no
/// Python, so it always runs.
@Suite(.timeLimit(.minutes(1)))
struct ClientTransportFailureTests {
    func smtpClient(port: Int, _ configure: (inout SMTPClient.Configuration) -> Void = { _ in }) throws -> SMTPClient {
        var configuration = SMTPClient.Configuration(url: "smtp://127.0.0.1:\(port)", connectTimeout: .seconds(5), timeout: .seconds(20))
        configure(&configuration)
        return try SMTPClient(configuration: configuration)
    }

    func smsClient(port: Int, timeout: Duration = .seconds(10)) throws -> SMSClient {
        try SMSClient(configuration: .init(url: "http://127.0.0.1:\(port)/messages", connectTimeout: .seconds(5), timeout: timeout))
    }

    func message() throws -> EmailMessage {
        try EmailMessage(from: EmailAddress("no-reply@signet.example"), to: EmailAddress("alice@example.com"), subject: "Code", textBody: "482913")
    }

    // MARK: - SMTP

    @Test func smtpClosedPortIsATransientConnectFailure() async throws {
        let client = try smtpClient(port: try LoopbackSocket.closedPort())
        let error = await #expect(throws: DeliveryError.self) { try await client.send(try message()) }
        #expect(error?.code == .smtpConnectFailed)
        #expect(error?.isTransient == true)
    }

    @Test func smtpSilentServerTimesOut() async throws {
        let socket = try LoopbackSocket.listening()
        let client = try smtpClient(port: socket.port) { $0.timeout = .milliseconds(600) }
        let started = ContinuousClock.now
        let error = await #expect(throws: DeliveryError.self) { try await client.send(try message()) }
        #expect(error?.code == .smtpTimeout)
        #expect(ContinuousClock.now - started < .seconds(5))
        withExtendedLifetime(socket) {}
    }

    @Test func smtpCancellationAbortsABlockedSend() async throws {
        let socket = try LoopbackSocket.listening()
        let client = try smtpClient(port: socket.port) { $0.timeout = .seconds(60) }
        let message = try message()
        let task = Task { try await client.send(message) }
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(ContinuousClock.now - started < .seconds(5))
        withExtendedLifetime(socket) {}
    }

    // MARK: - SMS

    @Test func smsClosedPortIsATransientConnectFailure() async throws {
        let client = try smsClient(port: try LoopbackSocket.closedPort())
        let error = await #expect(throws: DeliveryError.self) { try await client.send(try SMSMessage(to: "+15551234567", text: "x")) }
        #expect(error?.code == .smsConnectFailed && error?.isTransient == true)
    }

    @Test func smsSilentGatewayTimesOut() async throws {
        let socket = try LoopbackSocket.listening()
        let client = try smsClient(port: socket.port, timeout: .milliseconds(500))
        let error = await #expect(throws: DeliveryError.self) { try await client.send(try SMSMessage(to: "+15551234567", text: "x")) }
        #expect(error?.code == .smsTimeout && error?.isTransient == true)
        withExtendedLifetime(socket) {}
    }

    @Test func smsCancellationBeforeTheSendStartsSkipsIt() async throws {
        let socket = try LoopbackSocket.listening()
        let client = try smsClient(port: socket.port, timeout: .seconds(60))
        let message = try SMSMessage(to: "+15551234567", text: "x")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(message)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        withExtendedLifetime(socket) {}
    }
}
