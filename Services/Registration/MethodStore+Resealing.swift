import Crypto
import ServiceKit

extension MethodStore {
    /// The TOTP secrets (`user_methods.sealed_secret`, sealed under `SIGNET_METHOD_SECRET_KEY`
    /// with the tenant and method id), for ``KeyResealer``.
    static func sealedSecrets(keys: SealingKeys) -> SealedColumn {
        .inTable("user_methods", key: ["id"], column: "sealed_secret", also: ["tenant_id"], variable: "SIGNET_METHOD_SECRET_KEY", keys: keys) { row in
            guard let id = row.string("id"), let tenant = row.string("tenant_id") else { return nil }
            return MethodEnrollment.secretBinding(tenant: tenant, method: id)
        }
    }
}
