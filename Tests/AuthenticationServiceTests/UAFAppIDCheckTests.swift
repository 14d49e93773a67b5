import Crypto
import Foundation
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// The start-up check that the authentication service makes the AppIDs the registration service
/// serves (both from `SIGNET_UAF_APP_ID_BASE`), against what registration announced in its
/// `UAFAuthenticatorRegistered` events.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UAFAppIDCheckTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    static func announce(_ h: Harness, appID: String?, at date: Date = Date()) async throws {
        try await h.consume(
            UAFAuthenticatorRegistered(
                tenantId: "acme", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", aaid: "ABCD#0001", keyId: Base64URL.encode(SecureRandom.bytes(32)),
                publicKey: "BJsvEtUsVKh7tmYHhJ2FBm3kHU-OCdWiUYVijgYa81MfkjQ1z6UiHbKP9_nRzIN9anprHqDGcR6q7O20q_yctZA", keyEncoding: 0x100,
                signatureAlgorithm: 1, signCounter: 0, attestationType: "basic_surrogate", registeredAt: date, appId: appID),
            source: .registration)
    }

    func check(_ h: Harness, enforce: Bool = true) -> UAFAppIDCheck {
        UAFAppIDCheck(
            pool: h.context.pool, ceremony: UAFAssertionCeremony(context: h.context, appIDBase: "http://localhost:8080/registration"), enforce: enforce,
            logger: h.context.logger)
    }

    @Test func passesWithNothingAnnouncedOrTheSameAppIDAndRefusesAnother() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key")
        // Before any registration (or from a registration service that does not announce it).
        try await check(h).run()
        try await Self.announce(h, appID: nil)
        try await check(h).run()

        try await Self.announce(h, appID: "http://localhost:8080/registration/v1/tenants/acme/uaf/facets")
        try await check(h).run()
        #expect(try await check(h).mismatch() == nil)

        // Registration moved to another base: the service refuses to start, naming both AppIDs…
        try await Self.announce(h, appID: "https://id.example.com/v1/tenants/acme/uaf/facets", at: Date().addingTimeInterval(1))
        let mismatch = try #require(try await check(h).mismatch())
        #expect(mismatch.announced == "https://id.example.com/v1/tenants/acme/uaf/facets")
        #expect(mismatch.ours == "http://localhost:8080/registration/v1/tenants/acme/uaf/facets")
        do {
            try await check(h).run()
            Issue.record("a mismatching AppID base passed the start-up check")
        } catch {
            let text = "\(error)"
            #expect(text.contains("SIGNET_UAF_APP_ID_BASE") && text.contains("https://id.example.com/v1/tenants/acme/uaf/facets"), "\(text)")
        }
        // …unless told to warn only.
        try await check(h, enforce: false).run()
        #expect(try UAFAppIDCheck.enforces(mode: "warn") == false && UAFAppIDCheck.enforces(mode: "enforce"))
        #expect(throws: (any Error).self) { try UAFAppIDCheck.enforces(mode: "off") }
    }
}
