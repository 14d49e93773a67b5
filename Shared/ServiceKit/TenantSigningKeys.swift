import Crypto
import FoundationEssentials
import JSON
import Platform
import Postgres
import Tokens

/// Per-tenant JWT signing keys kept by a service in its own database (the transaction
/// service's tcToken keys, the oob service's device identifier keys): P-256 keys generated
/// here, their private halves sealed with AES-256-GCM under the service's seal key in the table
/// that `Naming` names (`tenant_id, kid, sealed_private_key, public_jwk, created_at`). The newest
/// key signs; every key stays in the tenant's JWKS (and the service-wide one) so that tokens
/// signed before a rotation still verify. Keys are cached per process, for at most
/// ``cacheLifetime``, and reloaded at once for a token naming a key the cache does not hold
/// (``ring(for:holding:)``): a rotation on one replica reaches the others within a minute for
/// signing, at once for verifying. A tenant's ring publishes its newest
/// `JWKSet.maximumKeyCount` keys (64 rotations back); the service-wide JWKS lists every key.
public final class TenantSigningKeys: Sendable {
    /// How long a replica signs with and publishes a ring it read.
    public static let cacheLifetime: Duration = .seconds(60)
    /// A ring is read again for an unknown `kid` at most this often (a stream of forged ids
    /// does not become a stream of queries).
    public static let minimumReloadInterval: Duration = .seconds(1)

    /// Where a service keeps its keys and how they are named.
    public struct Naming: Sendable {
        /// The table (a constant of the service's migrations, never outside input).
        let table: StaticString
        /// The start of every key id, e.g. `tc` for `tc-<tenant>-<random>`.
        let keyIDPrefix: String
        /// The sealing's associated data starts with it: `<context>/<tenant>/<kid>`.
        let sealContext: String
        /// What the keys sign, for errors.
        let purpose: String

        public init(table: StaticString, keyIDPrefix: String, sealContext: String, purpose: String) {
            self.table = table
            self.keyIDPrefix = keyIDPrefix
            self.sealContext = sealContext
            self.purpose = purpose
        }
    }

    public struct Ring: Sendable {
        public let signer: JWTSigner
        public let keySet: JWKSet
    }

    public let pool: PostgresPool
    private let seal: SealingKeys
    private let naming: Naming
    /// Read by every token issued or verified: a `PlainLock`, as on the whole request path.
    private let rings = PlainLock<[String: (ring: Ring, loadedAt: ContinuousClock.Instant)]>([:])

    /// - Parameter seal: the service's seal key. Without it (a random key), keys sealed before a
    ///   restart cannot be opened, so new ones are made.
    public init(pool: PostgresPool, seal: SealingKeys, naming: Naming) {
        self.pool = pool
        self.seal = seal
        self.naming = naming
    }

    /// The tenant's ring, creating its first key when it has none.
    public func ring(for tenant: String, now: ContinuousClock.Instant = .now) async throws -> Ring {
        if let cached = rings.withLock({ $0[tenant] }), now - cached.loadedAt < Self.cacheLifetime { return cached.ring }
        return try await reload(tenant, now: now)
    }

    /// The tenant's ring, read again when it does not hold `kid` (a key another replica added)
    /// and was not read within ``minimumReloadInterval``.
    public func ring(for tenant: String, holding kid: String?, now: ContinuousClock.Instant = .now) async throws -> Ring {
        let ring = try await ring(for: tenant, now: now)
        guard let kid, !ring.keySet.keys.contains(where: { $0.keyID == kid }),
            let loadedAt = rings.withLock({ $0[tenant]?.loadedAt }), now - loadedAt >= Self.minimumReloadInterval
        else { return ring }
        return try await reload(tenant, now: now)
    }

    private func reload(_ tenant: String, now: ContinuousClock.Instant) async throws -> Ring {
        var ring = try await load(tenant)
        if ring == nil {
            try await addKey(tenant)
            ring = try await load(tenant)
        }
        guard let ring else { throw CryptoError("no \(naming.purpose) key") }
        rings.withLock { $0[tenant] = (ring, now) }
        return ring
    }

    /// A new current key for the tenant; earlier ones stay published.
    public func rotate(_ tenant: String) async throws -> String {
        let kid = try await addKey(tenant)
        rings.withLock { $0[tenant] = nil }
        return kid
    }

    /// Every tenant's published keys, as a JWK Set document (`{"keys": [...]}`). Not a
    /// `JWKSet`: that bound (64 keys) is for sets read from elsewhere, and a service with more
    /// than 64 keys in all (65 tenants) answered 500 here.
    public func allKeys() async throws -> String {
        let query = PostgresQuery(unsafeSQL: "SELECT public_jwk FROM \(naming.table) ORDER BY tenant_id, created_at")
        let rows = try await pool.withConnection { try await $0.query(query) }
        let keys = try rows.compactMap { $0.string("public_jwk") }.map { JSONValue.object(try JWK(json: $0).jsonObject) }
        return JSONValue.object(["keys": .array(keys)]).jsonString
    }

    /// The keys' private halves (`sealed_private_key` of the naming's table), for
    /// ``KeyResealer``; `variable` names the seal key in its logs.
    public func sealedColumn(variable: String) -> SealedColumn {
        let context = naming.sealContext
        return .inTable(naming.table, key: ["tenant_id", "kid"], column: "sealed_private_key", variable: variable, keys: seal) { row in
            guard let tenant = row.string("tenant_id"), let kid = row.string("kid") else { return nil }
            return Self.associatedData(context, tenant, kid)
        }
    }

    private static func associatedData(_ context: String, _ tenant: String, _ kid: String) -> [UInt8] {
        Array("\(context)/\(tenant)/\(kid)".utf8)
    }

    private func associatedData(_ tenant: String, _ kid: String) -> [UInt8] {
        Self.associatedData(naming.sealContext, tenant, kid)
    }

    @discardableResult
    private func addKey(_ tenant: String) async throws -> String {
        let key = try PrivateKey.generateP256()
        let kid = "\(naming.keyIDPrefix)-\(tenant)-\(Hex.encode(SecureRandom.bytes(6)))"
        let signer = try JWTSigner(privateKey: key, keyID: kid)
        let sealed = try seal.seal(Array(try key.pemPKCS8().utf8), associatedData: associatedData(tenant, kid))
        let query = PostgresQuery(
            unsafeSQL: "INSERT INTO \(naming.table) (tenant_id, kid, sealed_private_key, public_jwk, created_at) VALUES ($1, $2, $3, $4, $5)",
            binds: [
                tenant.postgresText, kid.postgresText, PostgresBytes(sealed).postgresText,
                JSONValue.object(signer.publicJWK.jsonObject).jsonString.postgresText, Date().postgresText,
            ])
        try await pool.withConnection { try await $0.query(query) }
        return kid
    }

    private func load(_ tenant: String) async throws -> Ring? {
        let query = PostgresQuery(
            unsafeSQL: "SELECT kid, sealed_private_key, public_jwk FROM \(naming.table) WHERE tenant_id = $1 ORDER BY created_at DESC, kid LIMIT $2",
            binds: [tenant.postgresText, JWKSet.maximumKeyCount.postgresText])
        let rows = try await pool.withConnection { try await $0.query(query) }
        guard !rows.isEmpty else { return nil }
        var signer: JWTSigner?
        var published: [JWK] = []
        for row in rows {
            guard let kid = row.string("kid"), let sealed = row.bytes("sealed_private_key"), let jwk = row.string("public_jwk") else { continue }
            published.append(try JWK(json: jwk))
            // The newest key that this process can open signs (keys sealed under another seal
            // key stay published but unusable here).
            if signer == nil, let pem = try? seal.open(sealed, associatedData: associatedData(tenant, kid)) {
                signer = try JWTSigner(privateKey: try PrivateKey.fromPEM(String(decoding: pem, as: UTF8.self)), keyID: kid)
            }
        }
        guard let signer else { return nil }
        return Ring(signer: signer, keySet: try JWKSet(keys: published))
    }
}
