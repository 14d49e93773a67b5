import Testing

@testable import Delivery

/// How APNs and FCM answers are classified, and which of them the retry policy tries again:
/// 429 and 5xx yes; 400, 401, 403 and a token gone never.
@Suite struct PushTransportTests {
    static func code(_ status: Int, _ provider: PushTransport.Provider, _ body: String = "") -> String? {
        PushTransport.error(forStatus: status, provider: provider, body: Array(body.utf8))?.code.rawValue
    }

    @Test func answersAreClassifiedAsTheProvidersDefineThem() {
        #expect(Self.code(200, .apns) == nil && Self.code(200, .fcm) == nil)
        #expect(Self.code(410, .apns, #"{"reason":"Unregistered"}"#) == "push_token_gone")
        #expect(Self.code(400, .apns, #"{"reason":"BadDeviceToken"}"#) == "push_token_gone")
        #expect(Self.code(400, .apns, #"{"reason":"MissingTopic"}"#) == "push_rejected")
        #expect(Self.code(403, .apns, #"{"reason":"ExpiredProviderToken"}"#) == "push_unauthorized")
        #expect(Self.code(404, .fcm, #"{"error":{"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#) == "push_token_gone")
        #expect(Self.code(400, .fcm, #"{"error":{"status":"INVALID_ARGUMENT"}}"#) == "push_rejected")
        #expect(Self.code(401, .fcm) == "push_unauthorized")
        #expect(Self.code(429, .apns) == "push_throttled" && Self.code(429, .fcm) == "push_throttled")
        #expect(Self.code(503, .apns) == "push_unavailable" && Self.code(500, .fcm) == "push_unavailable")
        #expect(Self.code(404, .oauth) == "push_rejected")
    }

    @Test(arguments: [(429, true), (500, true), (503, true), (400, false), (401, false), (403, false), (410, false)])
    func onlyThrottlingAndServerErrorsAreRetried(status: Int, retried: Bool) async throws {
        let policy = RetryPolicy(maximumAttempts: 3, baseDelay: .zero, maximumDelay: .zero)
        var attempts = 0
        await #expect(throws: DeliveryError.self) {
            try await policy.run(sleep: { _ in }) { _ in
                attempts += 1
                throw PushTransport.error(forStatus: status, provider: .apns, body: [])!
            }
        }
        #expect(attempts == (retried ? 3 : 1))
    }

    @Test func aRefusedConnectionIsTransient() async throws {
        let transport = PushTransport(configuration: .init(connectTimeout: .seconds(2), timeout: .seconds(2), maximumConcurrentSends: 1))
        // Port 9 (discard) on loopback: nothing listens there.
        await #expect {
            _ = try await transport.post(url: "http://127.0.0.1:9/3/device/00", headers: [], body: [])
        } throws: { error in
            (error as? DeliveryError)?.code == .pushConnectFailed && (error as? DeliveryError)?.isTransient == true
        }
    }
}
