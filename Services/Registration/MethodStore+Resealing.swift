import Crypto
import FoundationEssentials
import Postgres
import Schema
import ServiceKit

extension MethodStore {
    /// The TOTP secrets (`user_methods.sealed_secret`, sealed under `SIGNET_METHOD_SECRET_KEY`
    /// with the tenant and method id), for ``KeyResealer``. The secret of a method the
    /// authentication service keeps (ACTIVE or SUSPENDED) is sealed again with its
    /// `MethodChanged` event, which carries the new sealing, in one transaction: that service's
    /// copy follows, and a copy rebuilt from the events once the old key is dropped ends with a
    /// secret the new key opens (the events published before still carry the old sealing).
    static func sealedSecrets(keys: SealingKeys, subjectKey: SubjectKey) -> SealedColumn {
        .inTable(
            "user_methods", key: ["id"], column: "sealed_secret", also: ["tenant_id"], variable: "SIGNET_METHOD_SECRET_KEY", keys: keys,
            returning: ["id", "tenant_id", "username", "type", "status"],
            replaced: { row, resealed, conn in
                guard let status = row.string("status"), status == "ACTIVE" || status == "SUSPENDED", let id = row.string("id"),
                    let tenant = row.string("tenant_id"), let username = row.string("username"), let type = row.string("type")
                else { return }
                try await Outbox.enqueue(
                    MethodChanged(
                        tenantId: tenant, subjectRef: subjectKey.ref(tenant: tenant, username: username), methodId: id, type: type, status: status,
                        piiRef: nil, sealedSecret: Base64URL.encode(resealed), lastTotpStep: nil, changedAt: Date()),
                    source: .registration, subject: tenant, key: tenant, on: conn)
            }
        ) { row in
            guard let id = row.string("id"), let tenant = row.string("tenant_id") else { return nil }
            return MethodEnrollment.secretBinding(tenant: tenant, method: id)
        }
    }
}
