/// The opaque subject reference events carry instead of a username (issue #18): `s1.` and the
/// base64url (no padding) of 32 bytes, computed by `Crypto.SubjectKey` from the deployment's
/// subject key, the tenant and the username. Consumers key the rows they build from events by
/// it; a service that has a username (from its own API) computes the reference to look them up.
public enum SubjectRefFormat {
    /// Whether `s` has the form of a subject reference (`s1.` + 43 base64url characters).
    public static func isValid(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 46, s.hasPrefix("s1.") else { return false }
        // 43 characters carry 258 bits: the last one holds 4 bits of data and 2 zero bits.
        return isBase64URL(String(s.dropFirst(3)), maxBytes: 32) && "AEIMQUYcgkosw048".utf8.contains(u[45])
    }
}
