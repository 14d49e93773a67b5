import Crypto
import HTTPServer
import JSON

/// The console's own RP API key of each tenant whose users it manages: the RP API's user
/// routes (credentials, their status) take a tenant's API key, not the admin token. The key is
/// derived, never stored: HMAC-SHA-256 of the tenant id under the operators' tenant's key
/// (`SIGNET_CONSOLE_RP_API_KEY`), and imported through the admin API
/// (`PUT /v1/admin/tenants/{t}/api-keys/{keyId}`, idempotent) before the console first uses
/// it for that tenant. Every replica derives the same key; rotating the console's key gives
/// every tenant a new one (the old ones are revoked by an administrator).
///
/// - Important: The key appears in the tenant's key list (as any RP key, by id and hash):
///   an administrator who revokes it takes the console's user management away for that
///   tenant until the console imports it again (after a restart).
public actor ConsoleTenantKeys {
    private let upstream: any ConsoleUpstream
    private let secret: String
    private var imported: Set<String> = []

    public init(upstream: any ConsoleUpstream, secret: String) {
        self.upstream = upstream
        self.secret = secret
    }

    /// The console's key of `tenant`.
    public static func key(for tenant: String, secret: String) -> String {
        "sc_" + Base64URL.encode(SHA256.hmac(key: Array(secret.utf8), data: Array("signet-console tenant key\u{0}\(tenant)".utf8)))
    }

    /// Its id: `k_` and the first 16 hex digits of the key's SHA-256.
    public static func keyID(for tenant: String, secret: String) -> String {
        "k_" + SHA256.hash(Array(key(for: tenant, secret: secret).utf8)).prefix(8).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]], as: UTF8.self)
        }.joined()
    }

    /// Imports the console's key of `tenant` unless this process did already.
    ///
    /// - Throws: the service's problem (404 `tenant_not_found` for an unknown tenant) or 503.
    public func ensure(_ tenant: String) async throws {
        guard !imported.contains(tenant) else { return }
        let body = try JSONValueEncoder().encodeToBytes(["apiKey": Self.key(for: tenant, secret: secret)])
        try await upstream.send(
            .registration, "PUT", "/v1/admin/tenants/\(tenant)/api-keys/\(Self.keyID(for: tenant, secret: secret))", credential: .admin, body: body
        ).requireSuccess()
        imported.insert(tenant)
    }
}
