import Crypto
import Foundation
import Platform
import Postgres
import Tokens
import JSON

/// Device identifier JWT signing keys, one ring per tenant: P-256 keys generated here, their private halves
/// sealed with AES-256-GCM under `SIGNET_OOB_KEY_SEAL` in `device_token_keys`. The newest key
/// signs; every key stays in the tenant's JWKS (and the service-wide one) so that tokens signed
/// before a rotation still verify. Keys are cached per process.
final class DeviceTokenKeys: Sendable {
    let pool: PostgresPool
    private let seal: AES256GCM
    /// Read by every device token issued or verified: a `PlainLock`, as on the whole request path.
    private let rings = PlainLock<[String: Ring]>([:])

    struct Ring: Sendable {
        let signer: JWTSigner
        let keySet: JWKSet
    }

    /// - Parameter seal: from `SIGNET_OOB_KEY_SEAL`. Without it (a random key), keys sealed
    ///   before a restart cannot be opened, so new ones are made.
    init(pool: PostgresPool, seal: AES256GCM) {
        self.pool = pool
        self.seal = seal
    }

    /// The tenant's ring, creating its first key when it has none.
    func ring(for tenant: String) async throws -> Ring {
        if let r = rings.withLock({ $0[tenant] }) { return r }
        var ring = try await load(tenant)
        if ring == nil {
            try await addKey(tenant)
            ring = try await load(tenant)
        }
        guard let ring else { throw CryptoError("no device token key") }
        rings.withLock { $0[tenant] = ring }
        return ring
    }

    /// A new current key for the tenant; earlier ones stay published.
    func rotate(_ tenant: String) async throws -> String {
        let kid = try await addKey(tenant)
        rings.withLock { $0[tenant] = nil }
        return kid
    }

    /// Every tenant's published keys.
    func allKeys() async throws -> JWKSet {
        let rows = try await pool.withConnection { try await $0.query("SELECT public_jwk FROM device_token_keys ORDER BY tenant_id, created_at") }
        return try JWKSet(keys: rows.compactMap { $0.string("public_jwk") }.map { try JWK(json: $0) })
    }

    @discardableResult
    private func addKey(_ tenant: String) async throws -> String {
        let key = try PrivateKey.generateP256()
        let kid = "dv-\(tenant)-\(Hex.encode(SecureRandom.bytes(6)))"
        let signer = try JWTSigner(privateKey: key, keyID: kid)
        let sealed = try seal.seal(Array(try key.pemPKCS8().utf8), associatedData: Array("device-token/\(tenant)/\(kid)".utf8))
        try await pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO device_token_keys (tenant_id, kid, sealed_private_key, public_jwk, created_at)
                VALUES (\(tenant), \(kid), \(PostgresBytes(sealed)), \(JSONValue.object(signer.publicJWK.jsonObject).jsonString), \(Date()))
                """)
        }
        return kid
    }

    private func load(_ tenant: String) async throws -> Ring? {
        let rows = try await pool.withConnection { conn in
            try await conn.query("SELECT kid, sealed_private_key, public_jwk FROM device_token_keys WHERE tenant_id = \(tenant) ORDER BY created_at DESC, kid")
        }
        guard !rows.isEmpty else { return nil }
        var signer: JWTSigner?
        var published: [JWK] = []
        for row in rows {
            guard let kid = row.string("kid"), let sealed = row.bytes("sealed_private_key"), let jwk = row.string("public_jwk") else { continue }
            published.append(try JWK(json: jwk))
            // The newest key that this process can open signs (keys sealed under another
            // SIGNET_OOB_KEY_SEAL stay published but unusable here).
            if signer == nil, let pem = try? seal.open(sealed, associatedData: Array("device-token/\(tenant)/\(kid)".utf8)) {
                signer = try JWTSigner(privateKey: try PrivateKey.fromPEM(String(decoding: pem, as: UTF8.self)), keyID: kid)
            }
        }
        guard let signer else { return nil }
        return Ring(signer: signer, keySet: try JWKSet(keys: published))
    }
}
