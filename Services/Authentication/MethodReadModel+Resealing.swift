import Crypto
import ServiceKit

/// The authentication service's copies of the TOTP secrets (`user_methods.sealed_secret`, as the
/// registration service sealed them: `SIGNET_METHOD_SECRET_KEY`, the tenant and method id),
/// for ``KeyResealer``.
enum MethodSecretsColumn {
    static func column(keys: SealingKeys) -> SealedColumn {
        .inTable("user_methods", key: ["tenant_id", "method_id"], column: "sealed_secret", variable: "SIGNET_METHOD_SECRET_KEY", keys: keys) { row in
            guard let tenant = row.string("tenant_id"), let method = row.string("method_id") else { return nil }
            return CodeMethodKeys.secretBinding(tenant: tenant, method: method)
        }
    }
}
