import FIDO
import Platform

/// What a sign-in needs of a credential that never changes once registered: its owner, user
/// handle, public key (parsed: about 5 µs for a P-256 COSE key since the key is built from its
/// point, 0.06 of a verification; through OpenSSL's decoders it cost about 2), backup
/// eligibility and model. A hit saves the read-model query above all.
///
/// Mutable state (counter, status, clone flag) is never taken from here: `record_assertion`
/// checks it in the database, in the transaction that consumes the challenge, and also
/// checks that the stored key is still the one verified here.
struct CachedCredential: Sendable {
    /// The owner's subject reference (the read model knows no username).
    let subjectRef: String
    /// The owner's username once known (``SubjectUsernames``); nil until then.
    var username: String?
    let userHandle: [UInt8]
    let publicKeyCOSE: [UInt8]
    let key: COSEKey
    let backupEligible: Bool
    /// The authenticator model (lower-case), when registration knew it.
    let aaguid: String?
}

/// Credentials by tenant and credential id, per process. Bounded (`SIGNET_CREDENTIAL_CACHE_SIZE`):
/// cleared wholesale when full (entries are cheap to read again); size 0 keeps nothing, so that
/// every sign-in reads and parses its credential (`make bench`'s cache-missed figure).
final class CredentialCache: Sendable {
    private struct Key: Hashable {
        let tenant: String
        let credentialID: [UInt8]
    }


    /// Read by every sign-in ceremony: a `PlainLock`, as on the whole request path (see
    /// `RateLimiter` for the figure against an actor hop).
    private let entries = PlainLock<[Key: CachedCredential]>([:])
    private let capacity: Int

    init(capacity: Int = CredentialCache.defaultCapacity) { self.capacity = capacity }

    /// `SIGNET_CREDENTIAL_CACHE_SIZE`'s default.
    static let defaultCapacity = 100_000

    func credential(tenant: String, id: [UInt8]) -> CachedCredential? {
        entries.withLock { $0[Key(tenant: tenant, credentialID: id)] }
    }

    func store(_ credential: CachedCredential, tenant: String, id: [UInt8]) {
        guard capacity > 0 else { return }
        entries.withLock { e in
            if e.count >= capacity { e.removeAll(keepingCapacity: true) }
            e[Key(tenant: tenant, credentialID: id)] = credential
        }
    }

    func remove(tenant: String, id: [UInt8]) {
        _ = entries.withLock { $0.removeValue(forKey: Key(tenant: tenant, credentialID: id)) }
    }
}
