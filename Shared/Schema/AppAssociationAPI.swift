import FoundationEssentials

/// A tenant's mobile apps and QR defaults, set by the admin API of the oob-notification service
/// (`PUT /v1/admin/tenants/{tenant}/app-settings`, which answers it back as stored) and used
/// for its app association files (served for the tenant's `domains` on
/// `/.well-known/apple-app-site-association` and `/.well-known/assetlinks.json`) and its QR
/// payloads.
public struct TenantAppSettings: Codable, Sendable, Equatable {
    /// The host names (lower-case, no port) whose association files are this tenant's; a host
    /// belongs to one tenant at most. 0-10.
    public var domains: [String]
    /// iOS app identifiers `TEAMID.bundle.id` (a 10-character team id, then the bundle id):
    /// `webcredentials` and `applinks` of the Apple file. 0-10.
    public var iosAppIds: [String]
    /// Android apps: their package names and signing certificates' SHA-256 fingerprints. 0-10.
    public var androidApps: [AndroidApp]
    /// The QR payload form when a QR session's request names none (`deepLink`,
    /// `universalLink`, `compact`); absent: the deployment's `SIGNET_OOB_QR_DEFAULT_TYPE`.
    public var defaultQrType: String?
    /// Where universal-link QR payloads live (`<webUrl>/qr/<id>`), the page a phone without
    /// the app opens: an http(s) URL on one of the tenant's origins, without query, fragment
    /// or trailing slash. Absent: the tenant's first https origin.
    public var webUrl: String?
    /// The QR session purposes the tenant offers (`authenticate`, `register`, `bless`); absent:
    /// every purpose the service offers. A session of another purpose is refused at creation
    /// (403 `qr_purpose_not_allowed`), and a device's QR capabilities say so.
    public var qrPurposes: [String]?
    /// Whether the RP may give an approval's display text (`text`) per approval; absent or
    /// false: the push text comes from the tenant's push templates and `text` is refused.
    public var allowDynamicText: Bool?

    public struct AndroidApp: Codable, Sendable, Equatable {
        /// The application id, e.g. `com.bank.app`.
        public var packageName: String
        /// `AA:BB:…` (32 upper-case hex bytes separated by colons), 1-5.
        public var sha256CertFingerprints: [String]

        public init(packageName: String, sha256CertFingerprints: [String]) {
            self.packageName = packageName
            self.sha256CertFingerprints = sha256CertFingerprints
        }
    }

    public init(
        domains: [String], iosAppIds: [String], androidApps: [AndroidApp], defaultQrType: String? = nil, webUrl: String? = nil, qrPurposes: [String]? = nil,
        allowDynamicText: Bool? = nil
    ) {
        self.allowDynamicText = allowDynamicText
        self.domains = domains
        self.iosAppIds = iosAppIds
        self.androidApps = androidApps
        self.defaultQrType = defaultQrType
        self.webUrl = webUrl
        self.qrPurposes = qrPurposes
    }

    /// Whether the tenant offers QR sessions of `purpose`.
    public func allowsQR(_ purpose: String) -> Bool { qrPurposes?.contains(purpose) ?? true }

    public static var fullExample: TenantAppSettings {
        TenantAppSettings(
            domains: ["bank.example", "www.bank.example"], iosAppIds: ["ABCDE12345.com.bank.app"],
            androidApps: [
                AndroidApp(
                    packageName: "com.bank.app",
                    sha256CertFingerprints: ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"])
            ], defaultQrType: "universalLink", webUrl: "https://bank.example/signin", qrPurposes: ["authenticate", "register"],
            allowDynamicText: true)
    }
}

/// `GET /.well-known/apple-app-site-association` for a tenant's domain: its iOS apps may use
/// the domain's passkeys and passwords (`webcredentials`) and open its QR universal links
/// (`applinks`).
public struct AppleAppSiteAssociation: Codable, Sendable, Equatable {
    public var applinks: AppLinks
    public var webcredentials: WebCredentials

    public struct AppLinks: Codable, Sendable, Equatable {
        public var details: [Detail]
        public init(details: [Detail]) { self.details = details }
    }

    public struct Detail: Codable, Sendable, Equatable {
        public var appIDs: [String]
        public var components: [Component]
        public init(appIDs: [String], components: [Component]) {
            self.appIDs = appIDs
            self.components = components
        }
    }

    /// A URL component pattern: `/` matches the path (`*` any run of characters).
    public struct Component: Codable, Sendable, Equatable {
        public var path: String
        public var comment: String?
        enum CodingKeys: String, CodingKey {
            case path = "/"
            case comment
        }
        public init(path: String, comment: String? = nil) {
            self.path = path
            self.comment = comment
        }
    }

    public struct WebCredentials: Codable, Sendable, Equatable {
        public var apps: [String]
        public init(apps: [String]) { self.apps = apps }
    }

    public init(applinks: AppLinks, webcredentials: WebCredentials) {
        self.applinks = applinks
        self.webcredentials = webcredentials
    }

    /// The path pattern of every universal-link QR payload (`<origin or webUrl>/qr/qr_<hex>`).
    public static let qrPathPattern = "*/qr/qr_*"

    /// The file for `appIDs`.
    public init(appIDs: [String]) {
        self.init(
            applinks: AppLinks(details: [Detail(appIDs: appIDs, components: [Component(path: Self.qrPathPattern, comment: "QR codes")])]),
            webcredentials: WebCredentials(apps: appIDs))
    }

    public static var fullExample: AppleAppSiteAssociation { AppleAppSiteAssociation(appIDs: ["ABCDE12345.com.bank.app"]) }
}

/// One statement of `GET /.well-known/assetlinks.json` (Digital Asset Links): the Android app
/// may use the domain's credentials (`delegate_permission/common.get_login_creds`) and handle
/// its links (`delegate_permission/common.handle_all_urls`).
public struct AssetLinkStatement: Codable, Sendable, Equatable {
    public var relation: [String]
    public var target: Target

    public struct Target: Codable, Sendable, Equatable {
        /// `android_app`.
        public var namespace: String
        public var packageName: String
        public var sha256CertFingerprints: [String]

        enum CodingKeys: String, CodingKey {
            case namespace
            case packageName = "package_name"
            case sha256CertFingerprints = "sha256_cert_fingerprints"
        }

        public init(namespace: String, packageName: String, sha256CertFingerprints: [String]) {
            self.namespace = namespace
            self.packageName = packageName
            self.sha256CertFingerprints = sha256CertFingerprints
        }
    }

    public static let relations = ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"]

    public init(relation: [String], target: Target) {
        self.relation = relation
        self.target = target
    }

    /// The statement for one of the tenant's Android apps.
    public init(app: TenantAppSettings.AndroidApp) {
        self.init(
            relation: Self.relations,
            target: Target(namespace: "android_app", packageName: app.packageName, sha256CertFingerprints: app.sha256CertFingerprints))
    }

    public static var fullExample: AssetLinkStatement { AssetLinkStatement(app: TenantAppSettings.fullExample.androidApps[0]) }
}
