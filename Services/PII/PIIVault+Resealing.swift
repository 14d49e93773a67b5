import Crypto
import ServiceKit

extension PIIVault {
    /// The subjects' data keys (`subject_keys.wrapped_key`, wrapped under `SIGNET_PII_KEK` with
    /// `<tenant>/<subject>`), for ``KeyResealer``. An erased subject's key (NULL) is not read,
    /// and one erased meanwhile is not written back: the update requires the old wrapping.
    var wrappedKeys: SealedColumn {
        .inTable("subject_keys", key: ["tenant_id", "subject"], column: "wrapped_key", variable: "SIGNET_PII_KEK", keys: kek) { row in
            guard let tenant = row.string("tenant_id"), let subject = row.string("subject") else { return nil }
            return Self.keyBinding(tenant: tenant, subject: subject)
        }
    }
}
