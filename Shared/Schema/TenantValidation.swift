import Foundation

/// Rules for tenant fields, shared by the admin API and event consumers.
public enum TenantValidation {
    public static let maxDisplayName = 200
    public static let maxOrigins = 20
    public static let maxOriginLength = 255

    /// 1–63 lower-case letters, digits or dashes, not starting with a dash.
    public static func isValidTenantID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard (1...63).contains(u.count), u[0] != 0x2D else { return false }
        return u.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
    }

    /// `k_` and 16 lower-case hex digits.
    public static func isValidKeyID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 18, s.hasPrefix("k_") else { return false }
        return u.dropFirst(2).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// A WebAuthn RP ID is a valid domain (WebAuthn L3 §5.1.2): lower-case labels of letters,
    /// digits and dashes, no scheme, port or path. `localhost` is allowed.
    public static func isValidRPID(_ s: String) -> Bool {
        guard (1...253).contains(s.utf8.count) else { return false }
        let labels = s.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            let u = Array(label.utf8)
            guard (1...63).contains(u.count), u.first != 0x2D, u.last != 0x2D else { return false }
            return u.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        }
    }

    /// An origin as browsers serialise it: `https://host[:port]` (or `http://localhost…`
    /// for development), no path, query or fragment; or an Android app origin
    /// `android:apk-key-hash:…`.
    public static func isValidOrigin(_ s: String) -> Bool {
        guard (1...maxOriginLength).contains(s.utf8.count) else { return false }
        if s.hasPrefix("android:apk-key-hash:") { return s.utf8.count > 21 }
        guard let url = URLComponents(string: s), let scheme = url.scheme, let host = url.host, !host.isEmpty else { return false }
        guard url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil, url.password == nil else { return false }
        guard host == host.lowercased(), scheme == scheme.lowercased() else { return false }
        switch scheme {
        case "https": return true
        case "http": return host == "localhost" || host.hasSuffix(".localhost") || host == "127.0.0.1"
        default: return false
        }
    }
}

/// Rules for RP API keys.
public enum APIKeyRules {
    /// Imported keys must be at least this long; generated ones are far longer.
    public static let minimumLength = 12
    public static let maximumLength = 256
}
