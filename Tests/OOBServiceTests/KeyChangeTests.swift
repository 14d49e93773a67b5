import Crypto
import Foundation
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// `SIGNET_OOB_KEY_SEAL` changed: a replica given the new key with the old one in
/// `SIGNET_OOB_KEY_SEAL_ACCEPTED` seals the push tokens and the device identifier keys again
/// under the new key, after which a replica that knows only the new key uses both.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct KeyChangeTests {
    static let old = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    static let new = Base64URL.encode([UInt8](repeating: 5, count: 32))

    @Test func pushTokensAndIdentifierKeysAreSealedAgainUnderTheNewKey() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let id = try await f.enrol(phone, as: "alice")
        let kid = try await DeviceTokenKeys(pool: f.h.context.pool, seal: try SealingKeys(key: [UInt8](repeating: 0, count: 32)), naming: .deviceToken)
            .ring(for: "acme").signer.keyID
        let onlyNew = try SealingKeys(key: [UInt8](repeating: 5, count: 32))
        func pushToken(under keys: SealingKeys) async throws -> String? {
            let stored = try #require(try await f.h.context.pool.withConnection { try await DeviceStore.load(id, tenant: "acme", on: $0) })
            return DeviceStore(pool: f.h.context.pool, seal: keys, subjectKey: f.h.context.configuration.subjectKey).pushToken(of: stored)
        }
        // Before: the new key alone opens neither.
        #expect(try await pushToken(under: onlyNew) == nil)
        #expect(f.h.keyResealer == nil, "no accepted key, no resealer")

        let changed = try await f.h.replica(environment: ["SIGNET_OOB_KEY_SEAL": Self.new, "SIGNET_OOB_KEY_SEAL_ACCEPTED": Self.old])
        let resealer = try #require(changed.keyResealer)
        let outcomes = try await resealer.pass()
        #expect(outcomes["devices.sealed_push_token"] == KeyResealer.Outcome(scanned: 1, resealed: 1))
        #expect(outcomes["device_token_keys.sealed_private_key"] == KeyResealer.Outcome(scanned: 1, resealed: 1))
        // A second pass finds nothing more to do.
        let again = try await resealer.pass()
        #expect(again["devices.sealed_push_token"] == KeyResealer.Outcome(scanned: 1))

        // After: the new key alone opens the push token, and signs with the same identifier key
        // (not a new one made for want of the old).
        #expect(try await pushToken(under: onlyNew) == phone.pushToken)
        let ring = try await DeviceTokenKeys(pool: f.h.context.pool, seal: onlyNew, naming: .deviceToken).ring(for: "acme")
        #expect(ring.signer.keyID == kid)
        #expect(ring.keySet.keys.count == 1)
    }
}
