import Crypto
import ServiceKit

/// The session ids (`sid`) of the direct sign-in routes (`…/webauthn/authentications`,
/// `…/uaf/authentications`), which give an access token for one assertion and write no
/// `sessions` row (their one round trip is `record_assertion`'s).
///
/// So that the relying party can still revoke such a session (`DELETE …/sessions/{sid}`), the
/// id carries its own proof of origin: 16 random bytes, then the first 8 bytes of a tag of
/// them and the tenant under a key every replica shares (``CeremonyHandles/tag(_:purpose:)``),
/// base64url — 32 characters where a flow's session id has 22. The revocation recognises the
/// ids this deployment issued for that tenant without having stored them, and refuses (404)
/// any other value as it refuses an unknown flow session; guessing a valid id means guessing 64
/// bits of a keyed tag, and would only revoke a session nobody holds.
///
/// The key derives from `SIGNET_CEREMONY_KEY`; an id made under a key of
/// `SIGNET_CEREMONY_KEY_ACCEPTED` (the previous one, while the key is being changed) is
/// recognised too, so the sessions issued before a change (access tokens only,
/// `SIGNET_SESSION_TTL_SECONDS`) can still be revoked by id while the old key stays accepted.
enum DirectSessionID {
    static let purpose = "signet direct session v1"
    static let randomByteCount = 16
    static let tagByteCount = 8
    /// The length of the base64url form: 24 bytes, no padding.
    static let characterCount = 32

    /// A new id for a direct sign-in's session in `tenant`.
    static func make(tenant: String, handles: CeremonyHandles) -> String {
        let random = SecureRandom.bytes(randomByteCount)
        return Base64URL.encode(random + tag(random, tenant: tenant, handles: handles))
    }

    /// Whether `sid` is an id ``make(tenant:handles:)`` gave for `tenant` (tag compared in
    /// constant time).
    static func isIssued(_ sid: String, tenant: String, handles: CeremonyHandles) -> Bool {
        guard sid.utf8.count == characterCount, let bytes = Base64URL.decode(sid), bytes.count == randomByteCount + tagByteCount else {
            return false
        }
        let random = Array(bytes[..<randomByteCount])
        return handles.isTag(Array(bytes[randomByteCount...]), of: random + Array(tenant.utf8), purpose: purpose)
    }

    private static func tag(_ random: [UInt8], tenant: String, handles: CeremonyHandles) -> [UInt8] {
        Array(handles.tag(random + Array(tenant.utf8), purpose: purpose).prefix(tagByteCount))
    }
}
