import Synchronization

/// The deployment's subject key (`SIGNET_SUBJECT_KEY`): it turns a tenant's username into the
/// opaque subject reference events carry instead of the username (issue #18: no personal data
/// in the event log).
///
/// `ref(tenant:username:)` is `"s1." + base64url(HMAC-SHA256(K_tenant, UTF-8 username))` with
/// `K_tenant = HKDF-SHA256(ikm: subject key, salt: none, info: "signet subject v1 " + tenant, 32)`
/// (RFC 5869). The same username gives the same reference in one tenant and unrelated ones in
/// two tenants; without the key a reference cannot be tied to a username (short of guessing
/// usernames and holding the key). Usernames are compared byte for byte
/// (`UsernameRules.identical`), and so is what is hashed: no normalisation happens here.
///
/// - Important: every service that produces or consumes such events needs the same key; it is
///   a secret like the internal token. ``description`` never shows it.
public struct SubjectKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The reference's version prefix.
    public static let prefix = "s1."
    /// The shortest key accepted, in bytes.
    public static let minimumByteCount = 32

    private let key: [UInt8]
    /// K_tenant by tenant: a sign-in names its user by reference on every request, and the
    /// derivation (two HMACs) would otherwise be repeated for each.
    private let tenantKeys = TenantKeys()

    /// - Throws: ``SubjectKeyError`` when the key is shorter than ``minimumByteCount``.
    public init(_ key: [UInt8]) throws(SubjectKeyError) {
        guard key.count >= Self.minimumByteCount else { throw SubjectKeyError() }
        self.key = key
    }

    /// The subject reference of `username` in `tenant`: `s1.` and 43 base64url characters.
    public func ref(tenant: String, username: String) -> String {
        let tenantKey = tenantKeys.key(for: tenant) {
            HKDF.sha256(inputKey: key, salt: [], info: Array("signet subject v1 \(tenant)".utf8), outputByteCount: 32)
        }
        return Self.prefix + Base64URL.encode(HMAC.authenticationCode(.sha256, key: tenantKey, message: Array(username.utf8)))
    }

    /// Derived tenant keys, bounded: past ``limit`` tenants the cache starts afresh (a
    /// deployment with more tenants than that derives again, as it did without the cache).
    final class TenantKeys: Sendable {
        static let limit = 4096
        private let keys = Mutex<[String: [UInt8]]>([:])

        func key(for tenant: String, derive: () -> [UInt8]) -> [UInt8] {
            if let known = keys.withLock({ $0[tenant] }) { return known }
            let derived = derive()
            keys.withLock { keys in
                if keys.count >= Self.limit { keys.removeAll() }
                keys[tenant] = derived
            }
            return derived
        }
    }

    /// Never the key.
    public var description: String { "SubjectKey(redacted)" }
    public var debugDescription: String { description }
}

/// A subject key shorter than ``SubjectKey/minimumByteCount`` bytes.
public struct SubjectKeyError: Error, CustomStringConvertible {
    public var description: String { "the subject key must be at least \(SubjectKey.minimumByteCount) bytes" }
}

/// HKDF (RFC 5869) over ``HMAC``.
public enum HKDF {
    /// HKDF-SHA256: extract (`PRK = HMAC(salt, IKM)`, an empty salt meaning 32 zero bytes),
    /// then expand to `outputByteCount` bytes (at most 255 × 32).
    public static func sha256(inputKey: [UInt8], salt: [UInt8], info: [UInt8], outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount > 0 && outputByteCount <= 255 * 32, "HKDF output length out of range")
        let prk = HMAC.authenticationCode(.sha256, key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, message: inputKey)
        var okm: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < outputByteCount {
            block = HMAC.authenticationCode(.sha256, key: prk, message: block + info + [counter])
            okm += block
            counter &+= 1
        }
        return Array(okm.prefix(outputByteCount))
    }
}
