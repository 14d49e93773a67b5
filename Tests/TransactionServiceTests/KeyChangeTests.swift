import Crypto
import Foundation
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import TransactionService

/// `SIGNET_TCTOKEN_KEY_SEAL` changed: a replica given the new key with the old one in
/// `SIGNET_TCTOKEN_KEY_SEAL_ACCEPTED` seals the tenants' tcToken signing keys again under the
/// new key, and a replica that knows only the new key goes on signing with the same key.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KeyChangeTests {
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)

    @Test func tcTokenKeysAreSealedAgainUnderTheNewKey() async throws {
        let h = try await ServiceHarness<TransactionService>.withDatabase(environment: ["SIGNET_TCTOKEN_KEY_SEAL": Base64URL.encode(Self.old)])
        defer { Task { await h.close() } }
        let kid = try await TCTokenKeys(pool: h.context.pool, seal: try SealingKeys(key: Self.old), naming: .tcToken).ring(for: "acme").signer.keyID
        let changed = try await h.replica(environment: [
            "SIGNET_TCTOKEN_KEY_SEAL": Base64URL.encode(Self.new), "SIGNET_TCTOKEN_KEY_SEAL_ACCEPTED": Base64URL.encode(Self.old),
        ])
        let resealer = try #require(changed.keyResealer)
        #expect(try await resealer.pass()["tctoken_keys.sealed_private_key"] == KeyResealer.Outcome(scanned: 1, resealed: 1))
        let ring = try await TCTokenKeys(pool: h.context.pool, seal: try SealingKeys(key: Self.new), naming: .tcToken).ring(for: "acme")
        #expect(ring.signer.keyID == kid)
        #expect(ring.keySet.keys.count == 1, "no key made for want of the old one")
    }
}
