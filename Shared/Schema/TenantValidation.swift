import FoundationEssentials

/// Rules for tenant fields, shared by the admin API and event consumers.
public enum TenantValidation {
    public static let maxDisplayName = 200
    public static let maxOrigins = 20
    public static let maxOriginLength = 255

    /// 1–63 lower-case letters, digits or dashes, not starting with a dash.
    public static func isValidTenantID(_ s: String) -> Bool {
        // Over the UTF-8 view itself (checked twice on every request that names a tenant: no
        // copy into an array).
        let u = s.utf8
        guard (1...63).contains(u.count), u.first != 0x2D else { return false }
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
    /// for development), no path, query, fragment or user; the host a lower-case DNS name
    /// (letters, digits, dashes; an IPv4 address is one) or a bracketed IPv6 address; the port
    /// 1–65535 without leading zeros. Or an Android app origin `android:apk-key-hash:` and the
    /// base64 (or base64url) certificate hash. Parsed by hand, byte by byte: a URL parser
    /// repairs or accepts more than a browser ever sends (`https://[x]`, control characters).
    public static func isValidOrigin(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard (1...maxOriginLength).contains(u.count) else { return false }
        let android = Array("android:apk-key-hash:".utf8)
        if u.starts(with: android) { return isBase64Hash(u[android.count...]) }
        let rest: ArraySlice<UInt8>
        let secure: Bool
        if u.starts(with: Array("https://".utf8)) {
            rest = u[8...]
            secure = true
        } else if u.starts(with: Array("http://".utf8)) {
            rest = u[7...]
            secure = false
        } else {
            return false
        }
        // Host, then an optional port.
        var host: ArraySlice<UInt8>
        var port: ArraySlice<UInt8>?
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")) else { return false }
            host = rest[rest.startIndex...close]
            let after = rest[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
            guard isIPv6Literal(host.dropFirst().dropLast()) else { return false }
        } else {
            if let colon = rest.firstIndex(of: UInt8(ascii: ":")) {
                host = rest[..<colon]
                port = rest[(colon + 1)...]
            } else {
                host = rest
            }
            guard isDNSName(host) else { return false }
        }
        if let port, !isPort(port) { return false }
        if secure { return true }
        let h = String(decoding: host, as: UTF8.self)
        return h == "localhost" || h.hasSuffix(".localhost") || h == "127.0.0.1"
    }

    /// Lower-case labels of letters, digits and dashes (not at either end), 1–63 bytes each,
    /// 253 in all.
    private static func isDNSName(_ host: ArraySlice<UInt8>) -> Bool {
        guard (1...253).contains(host.count) else { return false }
        return host.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).allSatisfy { label in
            guard (1...63).contains(label.count), label.first != 0x2D, label.last != 0x2D else { return false }
            return label.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        }
    }

    /// An IPv6 address as browsers serialise it inside brackets: lower-case hex digits and
    /// colons (and the dotted tail of an embedded IPv4 address), at most eight groups of at
    /// most four digits, one `::` at most.
    private static func isIPv6Literal(_ text: ArraySlice<UInt8>) -> Bool {
        guard (2...45).contains(text.count) else { return false }
        guard text.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x3A || $0 == 0x2E }) else { return false }
        let string = String(decoding: text, as: UTF8.self)
        let halves = string.components(separatedBy: "::")
        guard halves.count <= 2 else { return false }
        var groups = 0
        for (h, half) in halves.enumerated() where !half.isEmpty {
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (i, part) in parts.enumerated() {
                if part.contains(".") {
                    // Only the last group of the address may be a dotted IPv4 address.
                    guard h == halves.count - 1, i == parts.count - 1 else { return false }
                    let octets = part.split(separator: ".", omittingEmptySubsequences: false)
                    guard octets.count == 4, octets.allSatisfy({ o in (1...3).contains(o.count) && (o.count == 1 || o.first != "0") && (Int(o) ?? 256) <= 255 }) else { return false }
                    groups += 2
                } else {
                    guard (1...4).contains(part.count) else { return false }
                    groups += 1
                }
            }
        }
        return halves.count == 2 ? groups <= 7 : groups == 8
    }

    /// 1–65535, digits only, no leading zero.
    private static func isPort(_ port: ArraySlice<UInt8>) -> Bool {
        guard (1...5).contains(port.count), port.first != UInt8(ascii: "0"), port.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        return Int(String(decoding: port, as: UTF8.self)).map { $0 <= 65535 } ?? false
    }

    /// A certificate hash in base64 or base64url: 1–128 characters of either alphabet, `=`
    /// padding only at the end.
    private static func isBase64Hash(_ text: ArraySlice<UInt8>) -> Bool {
        guard (1...128).contains(text.count) else { return false }
        let body = text.prefix { $0 != UInt8(ascii: "=") }
        let padding = text.dropFirst(body.count)
        guard !body.isEmpty, padding.count <= 2, padding.allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2F || $0 == 0x2D || $0 == 0x5F
        }
    }
}

/// Rules for RP API keys.
public enum APIKeyRules {
    /// Imported keys must be at least this long; generated ones are far longer.
    public static let minimumLength = 12
    public static let maximumLength = 256
}
