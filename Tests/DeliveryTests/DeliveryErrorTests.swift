import CCurl
import Testing

@testable import Delivery

/// Error classification of both clients, without a network: libcurl codes and protocol
/// statuses to stable codes, transient or permanent, and what descriptions may show.
@Suite struct DeliveryErrorTests {
    static func failure(_ code: CURLcode) -> CurlFailure { CurlFailure(code: code, text: "detail naming alice@example.com") }

    @Test(arguments: [
        (CURLE_SEND_ERROR, 550, DeliveryError.Code.smtpRejected, false),
        (CURLE_WEIRD_SERVER_REPLY, 554, .smtpRejected, false),
        (CURLE_SEND_ERROR, 451, .smtpDeferred, true),
        (CURLE_LOGIN_DENIED, 535, .smtpAuthFailed, false),
        (CURLE_SEND_ERROR, 530, .smtpAuthFailed, false),
        (CURLE_COULDNT_CONNECT, 0, .smtpConnectFailed, true),
        (CURLE_COULDNT_RESOLVE_HOST, 0, .smtpConnectFailed, true),
        (CURLE_OPERATION_TIMEDOUT, 0, .smtpTimeout, true),
        (CURLE_USE_SSL_FAILED, 250, .smtpTLSFailed, false),
        (CURLE_PEER_FAILED_VERIFICATION, 0, .smtpTLSFailed, false),
        (CURLE_RECV_ERROR, 250, .smtpConnectionLost, true),
        (CURLE_URL_MALFORMAT, 0, .invalidConfiguration, false),
        (CURLE_OUT_OF_MEMORY, 0, .smtpFailed, false),
    ])
    func classifiesSMTPFailures(curl: CURLcode, reply: Int, code: DeliveryError.Code, transient: Bool) {
        let error = SMTPClient.error(for: Self.failure(curl), replyCode: reply)
        #expect(error.code == code)
        #expect(error.isTransient == transient)
        if reply >= 400 { #expect(error.statusCode == reply) }
    }

    @Test(arguments: [
        (400, DeliveryError.Code.smsRejected, false), (401, .smsRejected, false), (404, .smsRejected, false),
        (422, .smsRejected, false), (408, .smsThrottled, true), (429, .smsThrottled, true),
        (500, .smsUnavailable, true), (502, .smsUnavailable, true), (503, .smsUnavailable, true),
        (302, .smsFailed, false),
    ])
    func classifiesHTTPStatuses(status: Int, code: DeliveryError.Code, transient: Bool) throws {
        let error = try #require(SMSClient.error(forStatus: status))
        #expect(error.code == code && error.statusCode == status && error.isTransient == transient)
    }

    @Test(arguments: [200, 201, 202, 204])
    func acceptsEvery2xx(status: Int) {
        #expect(SMSClient.error(forStatus: status) == nil)
    }

    @Test(arguments: [
        (CURLE_COULDNT_CONNECT, DeliveryError.Code.smsConnectFailed), (CURLE_OPERATION_TIMEDOUT, .smsTimeout),
        (CURLE_GOT_NOTHING, .smsConnectionLost), (CURLE_UNSUPPORTED_PROTOCOL, .invalidConfiguration),
        (CURLE_SSL_CONNECT_ERROR, .smsFailed),
    ])
    func classifiesSMSTransportFailures(curl: CURLcode, code: DeliveryError.Code) {
        #expect(SMSClient.error(for: Self.failure(curl)).code == code)
    }

    @Test func descriptionsCarryCodeAndStatusButNoDetail() {
        let error = SMTPClient.error(for: Self.failure(CURLE_SEND_ERROR), replyCode: 550)
        #expect(error.description == "smtp_rejected (status 550)")
        #expect(!error.description.contains("alice"))
        #expect(error.debugDescription.contains("alice@example.com"))
        #expect(error.debugDescription.contains("SMTPClient.swift"))
        #expect(DeliveryError(.smsTimeout).description == "sms_timeout")
    }

    @Test func configurationsNeverShowCredentials() throws {
        let smtp = SMTPClient.Configuration(url: "smtp://mx.example:587", requireSTARTTLS: true, username: "signet", password: "hunter2")
        #expect(!smtp.description.contains("hunter2") && smtp.description.contains("<redacted>"))
        let bearer = SMSClient.Configuration(url: "https://sms.example/messages", authorization: .bearer(token: "s3cr3t-token"))
        #expect(!bearer.description.contains("s3cr3t-token"))
        let basic = SMSClient.Configuration(url: "https://sms.example/messages", authorization: .basic(username: "u", password: "pw-123"))
        #expect(!basic.description.contains("pw-123"))
        #expect(SMSClient.Authorization.basic(username: "Aladdin", password: "open sesame").headerLine
            == "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    }

    @Test(arguments: ["http://mx.example", "ftp://mx.example", "mx.example:25", "smtp://mx.example\r\nX"])
    func refusesUnusableSMTPConfigurations(url: String) throws {
        let error = try #require(throws: DeliveryError.self) { try SMTPClient(configuration: .init(url: url)) }
        #expect(error.code == .invalidConfiguration)
    }

    @Test func refusesUnusableSMSConfigurations() throws {
        for configuration in [
            SMSClient.Configuration(url: "smtp://sms.example"),
            SMSClient.Configuration(url: "https://sms.example", authorization: .bearer(token: "a\r\nX-Evil: 1")),
            SMSClient.Configuration(url: "https://sms.example", timeout: .zero),
            SMSClient.Configuration(url: "https://sms.example", defaultSender: ""),
            SMSClient.Configuration(url: "https://sms.example", maximumConcurrentSends: 0),
        ] {
            let error = try #require(throws: DeliveryError.self) { try SMSClient(configuration: configuration) }
            #expect(error.code == .invalidConfiguration)
        }
    }
}
