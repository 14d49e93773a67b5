import Crypto
import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import Tokens

@testable import ServiceKit

/// Per-tenant signing keys over the stack's PostgreSQL (a scratch database), as two replicas of
/// a service hold them: a rotation on one reaches the other's verifications at once and its
/// signing within the cache's lifetime; a tenant rotated past the JWK Set bound and a service
/// with more keys in all than that bound still sign, verify and publish.
@Suite(.serialized, .timeLimit(.minutes(2))) struct TenantSigningKeysStackTests {
    static let naming = TenantSigningKeys.Naming(table: "signing_keys", keyIDPrefix: "tk", sealContext: "test-keys", purpose: "test")

    static func pool() async throws -> (PostgresPool, @Sendable () async -> Void) {
        try TestStack.require()
        let (name, drop) = try await TestStack.scratchDatabase(prefix: "keyring")
        let pool = TestStack.pool(database: name)
        try await pool.withConnection { conn in
            try await conn.query(
                """
                CREATE TABLE signing_keys (tenant_id text NOT NULL, kid text NOT NULL, sealed_private_key bytea NOT NULL,
                    public_jwk text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, kid))
                """)
        }
        return (pool, drop)
    }

    static func token(_ ring: TenantSigningKeys.Ring) throws -> String {
        try ring.signer.sign(JWTClaims(issuer: "i", audience: ["acme"], expiresAt: Date().addingTimeInterval(60)))
    }

    static func verifies(_ token: String, with ring: TenantSigningKeys.Ring) -> Bool {
        (try? JWTVerifier(keySet: ring.keySet, options: JWTValidationOptions(issuer: "i", audience: "acme")).verify(token, now: Date())) != nil
    }

    @Test func aRotationOnOneReplicaReachesTheOther() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { await drop() } }
        let seal = try SealingKeys(key: Array(repeating: 7, count: 32))
        let a = TenantSigningKeys(pool: pool, seal: seal, naming: Self.naming)
        let b = TenantSigningKeys(pool: pool, seal: seal, naming: Self.naming)
        let first = try await a.ring(for: "acme")
        #expect(try await b.ring(for: "acme").signer.keyID == first.signer.keyID)
        let kid = try await a.rotate("acme")
        let token = try Self.token(try await a.ring(for: "acme"))
        // B verifies a token of the new key at once: the unknown kid reads the ring again.
        let now = ContinuousClock.now.advanced(by: .seconds(2))
        #expect(Self.verifies(token, with: try await b.ring(for: "acme", holding: kid, now: now)))
        // And signs with it once its cache is older than its lifetime (here: just read).
        #expect(try await b.ring(for: "acme", now: now).signer.keyID == kid)
        let c = TenantSigningKeys(pool: pool, seal: seal, naming: Self.naming)
        _ = try await c.ring(for: "acme")
        let newer = try await a.rotate("acme")
        #expect(try await c.ring(for: "acme").signer.keyID != newer)
        #expect(try await c.ring(for: "acme", now: .now.advanced(by: TenantSigningKeys.cacheLifetime + .seconds(1))).signer.keyID == newer)
    }

    @Test func moreKeysThanAJWKSetHoldsStillSignVerifyAndPublish() async throws {
        let (pool, drop) = try await Self.pool()
        defer { Task { await drop() } }
        let keys = TenantSigningKeys(pool: pool, seal: try SealingKeys(key: Array(repeating: 9, count: 32)), naming: Self.naming)
        // 65 tenants with a key each, and one tenant rotated 65 times.
        for i in 0...JWKSet.maximumKeyCount { _ = try await keys.ring(for: "t\(i)") }
        for _ in 0...JWKSet.maximumKeyCount { _ = try await keys.rotate("acme") }
        let ring = try await keys.ring(for: "acme")
        #expect(ring.keySet.keys.count == JWKSet.maximumKeyCount)
        #expect(Self.verifies(try Self.token(ring), with: ring))
        let all = try JSONParser.parse(Array(try await keys.allKeys().utf8))
        guard case .object(let document) = all, case .array(let published)? = document["keys"] else {
            Issue.record("not a JWK Set document")
            return
        }
        #expect(published.count == 2 * (JWKSet.maximumKeyCount + 1))
    }
}
