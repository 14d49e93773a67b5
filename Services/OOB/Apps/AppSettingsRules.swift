import FoundationEssentials
import HTTPServer
import Schema

/// The strict checks of a tenant's app settings (``TenantAppSettings``): every member bounded
/// and of one spelling, since it ends up in files that Apple's and Google's crawlers read for
/// the tenant's domains, and in QR payloads.
enum AppSettingsRules {
    static let maximumDomains = 10
    static let maximumIOSApps = 10
    static let maximumAndroidApps = 10
    static let maximumFingerprints = 5
    static let maximumWebURLLength = 512

    /// Checks `settings` against the tenant's origins.
    ///
    /// - Throws: 400 `invalid_field` naming the first member that breaks a rule.
    static func check(_ settings: TenantAppSettings, origins: [String]) throws {
        guard settings.domains.count <= maximumDomains else { throw HTTPError.invalid("domains", "At most \(maximumDomains) domains.") }
        for domain in settings.domains where !isDomain(domain) {
            throw HTTPError.invalid("domains", "Domains are lower-case host names without scheme, port or path.")
        }
        guard Set(settings.domains).count == settings.domains.count else { throw HTTPError.invalid("domains", "A domain is listed twice.") }
        guard settings.iosAppIds.count <= maximumIOSApps else { throw HTTPError.invalid("iosAppIds", "At most \(maximumIOSApps) iOS apps.") }
        for appID in settings.iosAppIds where !isIOSAppID(appID) {
            throw HTTPError.invalid("iosAppIds", "iOS app ids are TEAMID.bundle.id: 10 upper-case letters or digits, a dot, then the bundle id.")
        }
        guard Set(settings.iosAppIds).count == settings.iosAppIds.count else { throw HTTPError.invalid("iosAppIds", "An app id is listed twice.") }
        guard settings.androidApps.count <= maximumAndroidApps else {
            throw HTTPError.invalid("androidApps", "At most \(maximumAndroidApps) Android apps.")
        }
        for app in settings.androidApps {
            guard isPackageName(app.packageName) else {
                throw HTTPError.invalid("androidApps", "Package names are two or more dot-separated Java identifiers (letters, digits, _), 1-255 characters.")
            }
            guard (1...maximumFingerprints).contains(app.sha256CertFingerprints.count), app.sha256CertFingerprints.allSatisfy(isFingerprint),
                Set(app.sha256CertFingerprints).count == app.sha256CertFingerprints.count
            else {
                throw HTTPError.invalid(
                    "androidApps", "1-\(maximumFingerprints) distinct SHA-256 certificate fingerprints per app, as 32 upper-case hex bytes separated by colons.")
            }
        }
        guard Set(settings.androidApps.map(\.packageName)).count == settings.androidApps.count else {
            throw HTTPError.invalid("androidApps", "A package name is listed twice.")
        }
        if let type = settings.defaultQrType, QRPayloadType(rawValue: type) == nil {
            throw HTTPError.invalid("defaultQrType", "defaultQrType is deepLink, universalLink or compact.")
        }
        if let webURL = settings.webUrl { try checkWebURL(webURL, origins: origins, field: "webUrl") }
        if let purposes = settings.qrPurposes {
            guard purposes.allSatisfy(QRSessionPurpose.all.contains), Set(purposes).count == purposes.count else {
                throw HTTPError.invalid("qrPurposes", "qrPurposes lists authenticate, register or bless, each once.")
            }
        }
    }

    /// A lower-case DNS host name (the rules of an RP ID: labels of letters, digits and dashes).
    static func isDomain(_ s: String) -> Bool { TenantValidation.isValidRPID(s) }

    /// `TEAMID.bundle.id`: Apple's 10-character team id, then a bundle id of letters, digits,
    /// dashes and dots (no empty segment), 155 characters at most in all.
    static func isIOSAppID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard (12...155).contains(u.count), u[10] == 0x2E else { return false }
        guard u[0..<10].allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { return false }
        let bundle = s.utf8.dropFirst(11).split(separator: 0x2E, omittingEmptySubsequences: false)
        return bundle.allSatisfy { segment in
            !segment.isEmpty && segment.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
        }
    }

    /// An Android application id: at least two dot-separated segments, each a letter then
    /// letters, digits or underscores; 255 characters at most.
    static func isPackageName(_ s: String) -> Bool {
        guard (3...255).contains(s.utf8.count) else { return false }
        let segments = s.utf8.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) else { return false }
            return segment.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
        }
    }

    /// `AA:BB:…:FF`: 32 bytes as upper-case hex pairs separated by colons (95 characters), the
    /// form `keytool` prints and Digital Asset Links compares.
    static func isFingerprint(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 95 else { return false }
        for (i, c) in u.enumerated() {
            if i % 3 == 2 {
                guard c == 0x3A else { return false }
            } else {
                guard (0x30...0x39).contains(c) || (0x41...0x46).contains(c) else { return false }
            }
        }
        return true
    }

    /// A web URL for universal-link QR payloads: one of `origins` (which only hold https
    /// origins, or http ones of localhost), then an optional path of unreserved characters and
    /// slashes, without a trailing slash, query, fragment or dot segment.
    ///
    /// - Throws: 400 `invalid_field` naming `field`.
    static func checkWebURL(_ url: String, origins: [String], field: String) throws {
        guard url.utf8.count <= maximumWebURLLength else { throw HTTPError.invalid(field, "\(field) is at most \(maximumWebURLLength) characters.") }
        guard let origin = origins.first(where: { url == $0 || url.hasPrefix($0 + "/") }), !origin.hasPrefix("android:") else {
            throw HTTPError.invalid(field, "\(field) must be on one of the tenant's web origins.")
        }
        let path = url.dropFirst(origin.count)
        guard path.isEmpty || (path.last != "/" && !path.contains("//")) else {
            throw HTTPError.invalid(field, "\(field) has no trailing slash or empty path segment.")
        }
        let segments = path.split(separator: "/")
        guard segments.allSatisfy({ $0 != "." && $0 != ".." }),
            path.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x2D, 0x2E, 0x5F, 0x7E, 0x2F].contains($0) })
        else { throw HTTPError.invalid(field, "\(field)'s path is letters, digits, - . _ ~ and slashes only (no query or fragment).") }
    }

    /// The tenant's domain a `Host` header names: lower-cased, without its port; nil for
    /// anything else than a host name (an IP literal, a malformed header).
    static func host(fromHeader header: String?) -> String? {
        guard let header, (1...260).contains(header.utf8.count) else { return nil }
        var host = Substring(header.lowercased())
        if let colon = host.lastIndex(of: ":") {
            let port = host[host.index(after: colon)...]
            guard (1...5).contains(port.count), port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber) else { return nil }
            host = host[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        let name = String(host)
        return isDomain(name) ? name : nil
    }
}
