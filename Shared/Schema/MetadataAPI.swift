/// `GET /v1/admin/metadata`: the FIDO metadata (MDS3 BLOB) in force.
public struct MetadataStatus: Codable, Sendable, Equatable {
    /// Whether a metadata source (file or URL) is configured.
    public var configured: Bool
    /// The serial number (`no`) of the BLOB in force.
    public var number: Int?
    /// The BLOB's `nextUpdate` (a date, `yyyy-MM-dd`).
    public var nextUpdate: String?
    /// Authenticator entries in the BLOB.
    public var entries: Int

    public init(configured: Bool, number: Int?, nextUpdate: String?, entries: Int) {
        self.configured = configured
        self.number = number
        self.nextUpdate = nextUpdate
        self.entries = entries
    }

    public static var fullExample: MetadataStatus { MetadataStatus(configured: true, number: 81, nextUpdate: "2026-12-01", entries: 212) }
}

/// `POST /v1/admin/metadata/refresh`: what a refresh did.
public struct MetadataRefreshOutcome: Codable, Sendable, Equatable {
    /// False when the source held no BLOB newer than the one in force.
    public var changed: Bool
    public var number: Int?
    public var previousNumber: Int?
    /// FIDO2 models newly reported revoked or compromised, and those whose suspensions an
    /// earlier refresh could not commit (tried again by every refresh until they commit).
    public var newlyRevokedAAGUIDs: [String]
    /// Active credentials of those models now suspended.
    public var credentialsSuspended: Int

    public init(changed: Bool, number: Int?, previousNumber: Int?, newlyRevokedAAGUIDs: [String], credentialsSuspended: Int) {
        self.changed = changed
        self.number = number
        self.previousNumber = previousNumber
        self.newlyRevokedAAGUIDs = newlyRevokedAAGUIDs
        self.credentialsSuspended = credentialsSuspended
    }

    public static var fullExample: MetadataRefreshOutcome {
        MetadataRefreshOutcome(
            changed: true, number: 82, previousNumber: 81, newlyRevokedAAGUIDs: ["ee882879-721c-4913-9775-3dfcce97072a"], credentialsSuspended: 3)
    }
}

/// `GET /v1/admin/metadata/models?q=&after=&limit=` (registration service, admin token): the
/// authenticator models of the FIDO metadata in force, to pick from when writing a FIDO or
/// UAF policy: name, icon, certification level and latest status, by name (`q`, a
/// case-insensitive part of it), in name order, a page at a time.
public struct MetadataModelList: Codable, Sendable, Equatable {
    public var models: [MetadataModel]
    /// The `after` of the next page (the last model's `id`); absent on the last one.
    public var next: String?

    public init(models: [MetadataModel], next: String? = nil) {
        self.models = models
        self.next = next
    }

    public static let maximumLimit = 100

    public static var fullExample: MetadataModelList { MetadataModelList(models: [.fullExample], next: "ee882879-721c-4913-9775-3dfcce97072a") }
}

/// One authenticator model of the metadata.
public struct MetadataModel: Codable, Sendable, Equatable {
    /// What identifies it in a policy: its AAGUID (FIDO2), AAID (UAF), or first attestation
    /// certificate key identifier (U2F).
    public var id: String
    public var aaguid: String?
    public var aaid: String?
    public var attestationCertificateKeyIdentifiers: [String]?
    /// The metadata statement's `description`.
    public var name: String
    /// A `data:` URL, as the metadata gives it.
    public var icon: String?
    /// `fido2`, `uaf` or `u2f`.
    public var protocolFamily: String
    /// The highest FIDO certification level its status reports give, if any.
    public var certificationLevel: String?
    /// The latest status report's status (`FIDO_CERTIFIED_L2`, `REVOKED`, …).
    public var status: String?
    /// Its effective date (`yyyy-MM-dd`).
    public var statusDate: String?

    public init(
        id: String, aaguid: String?, aaid: String?, attestationCertificateKeyIdentifiers: [String]?, name: String, icon: String?, protocolFamily: String,
        certificationLevel: String?, status: String?, statusDate: String?
    ) {
        self.id = id
        self.aaguid = aaguid
        self.aaid = aaid
        self.attestationCertificateKeyIdentifiers = attestationCertificateKeyIdentifiers
        self.name = name
        self.icon = icon
        self.protocolFamily = protocolFamily
        self.certificationLevel = certificationLevel
        self.status = status
        self.statusDate = statusDate
    }

    public static var fullExample: MetadataModel {
        MetadataModel(
            id: "ee882879-721c-4913-9775-3dfcce97072a", aaguid: "ee882879-721c-4913-9775-3dfcce97072a", aaid: "4e4e#4005",
            attestationCertificateKeyIdentifiers: ["7d87f94259e4e23148514b5b63df58415da3aeaf"], name: "Example Key", icon: "data:image/png;base64,iVBORw0KGgo=",
            protocolFamily: "fido2", certificationLevel: "FIDO_CERTIFIED_L2", status: "FIDO_CERTIFIED_L2", statusDate: "2024-03-01")
    }
}
