import Crypto
import Foundation
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// `SIGNET_METHOD_SECRET_KEY` changed: the authentication service's copies of the TOTP secrets
/// (from the registration service's events) are sealed again under the new key by a replica
/// that accepts the old one; a replica given only the new key then verifies their codes.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KeyChangeTests {
    typealias Harness = ServiceHarness<AuthenticationService>
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)

    @Test func totpSecretCopiesAreSealedAgainUnderTheNewKey() async throws {
        let h = try await Harness.withDatabase(environment: ["SIGNET_METHOD_SECRET_KEY": Base64URL.encode(Self.old)])
        defer { Task { await h.close() } }
        let method = "m_" + Hex.encode(SecureRandom.bytes(16)), secret = SecureRandom.bytes(20)
        let sealed = try SealingKeys(key: Self.old).seal(secret, associatedData: Array("acme/\(method)".utf8))
        #expect(CodeMethodKeys.secretBinding(tenant: "acme", method: method) == Array("acme/\(method)".utf8))
        try await h.consume(
            MethodChanged(
                tenantId: "acme", subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), methodId: method,
                type: "totp", status: "ACTIVE", piiRef: nil, sealedSecret: Base64URL.encode(sealed), lastTotpStep: nil, changedAt: Date()),
            source: .registration)
        let changed = try await h.replica(environment: [
            "SIGNET_METHOD_SECRET_KEY": Base64URL.encode(Self.new), "SIGNET_METHOD_SECRET_KEY_ACCEPTED": Base64URL.encode(Self.old),
        ])
        let resealer = try #require(changed.keyResealer)
        #expect(try await resealer.pass()["user_methods.sealed_secret"] == KeyResealer.Outcome(scanned: 1, resealed: 1))
        let stored = try await h.context.pool.withConnection {
            try await $0.query("SELECT sealed_secret FROM user_methods WHERE tenant_id = 'acme' AND method_id = \(method)")
        }.first?.bytes("sealed_secret")
        // Opened as the sign-in's TOTP step opens it, under the new key alone.
        #expect(try SealingKeys(key: Self.new).open(try #require(stored), associatedData: CodeMethodKeys.secretBinding(tenant: "acme", method: method)) == secret)
    }
}
