import Crypto
import Postgres
import Schema
import ServiceKit

/// The authentication service's copy of registration's non-FIDO methods (`user_methods`), kept
/// from `MethodChanged` events: vault references and masked destinations of code methods, and
/// sealed TOTP secrets (cleared when a method is deleted). Keyed by the user's subject
/// reference (the event carries no username): look a user's methods up by
/// `SubjectKey.ref(tenant:username:)`.
enum MethodReadModel {
    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(MethodChanged.self) { e, _, conn in
            let sealed = e.sealedSecret.flatMap(Base64URL.decode)
            try await conn.query(
                """
                INSERT INTO user_methods (tenant_id, method_id, subject_ref, type, status, pii_ref, masked, sealed_secret, last_totp_step)
                VALUES (\(e.tenantId), \(e.methodId), \(e.subjectRef), \(e.type), \(e.status), \(e.piiRef), \(e.masked),
                    \(sealed.map(PostgresBytes.init)), \(e.lastTotpStep.map(Int64.init)))
                ON CONFLICT (tenant_id, method_id) DO UPDATE SET status = EXCLUDED.status,
                    pii_ref = COALESCE(EXCLUDED.pii_ref, user_methods.pii_ref), masked = COALESCE(EXCLUDED.masked, user_methods.masked),
                    sealed_secret = CASE WHEN EXCLUDED.status = 'DELETED' THEN NULL ELSE COALESCE(EXCLUDED.sealed_secret, user_methods.sealed_secret) END
                """)
        }
        return h
    }
}
