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
    /// FIDO2 models newly reported revoked or compromised.
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
