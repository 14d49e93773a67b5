import ServiceKit

/// tcToken signing keys, one ring per tenant, sealed under `SIGNET_TCTOKEN_KEY_SEAL` in
/// `tctoken_keys` (see ``TenantSigningKeys``).
typealias TCTokenKeys = TenantSigningKeys

extension TenantSigningKeys.Naming {
    static let tcToken = TenantSigningKeys.Naming(table: "tctoken_keys", keyIDPrefix: "tc", sealContext: "tctoken", purpose: "tcToken")
}
