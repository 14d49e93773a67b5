import ServiceKit

/// Device identifier JWT signing keys, one ring per tenant, sealed under `SIGNET_OOB_KEY_SEAL`
/// in `device_token_keys` (see ``TenantSigningKeys``).
typealias DeviceTokenKeys = TenantSigningKeys

extension TenantSigningKeys.Naming {
    static let deviceToken = TenantSigningKeys.Naming(
        table: "device_token_keys", keyIDPrefix: "dv", sealContext: "device-token", purpose: "device token")
}
