import Crypto
import ServiceKit

extension DeviceStore {
    /// The devices' push tokens (`devices.sealed_push_token`, sealed under `SIGNET_OOB_KEY_SEAL`
    /// with `push-token/<tenant>/<device id>`), for ``KeyResealer``.
    var sealedPushTokens: SealedColumn {
        .inTable("devices", key: ["id"], column: "sealed_push_token", also: ["tenant_id"], variable: "SIGNET_OOB_KEY_SEAL", keys: seal) { row in
            guard let id = row.string("id"), let tenant = row.string("tenant_id") else { return nil }
            return Self.pushTokenBinding(tenant: tenant, device: id)
        }
    }
}
