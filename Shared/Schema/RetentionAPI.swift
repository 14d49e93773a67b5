import FoundationEssentials

/// `PUT`/`GET /v1/admin/tenants/{tenant}/retention` (registration service, admin token): how
/// long a tenant keeps history. A kind left out is kept (until the user's erasure). Each
/// service purges its own kind once a day (`SIGNET_RETENTION_PURGE_INTERVAL_SECONDS`).
public struct RetentionSettings: Codable, Sendable, Equatable {
    /// Deleted passkeys and methods (registration service), counted from their deletion.
    public var deletedRegistrationsDays: Int?
    /// The evidence and tcToken of decided transactions (transaction service), counted from
    /// their last change; the transaction itself stays.
    public var transactionEvidenceDays: Int?

    public static let allowedDays = 1...3650

    public init(deletedRegistrationsDays: Int? = nil, transactionEvidenceDays: Int? = nil) {
        self.deletedRegistrationsDays = deletedRegistrationsDays
        self.transactionEvidenceDays = transactionEvidenceDays
    }

    public static var fullExample: RetentionSettings { RetentionSettings(deletedRegistrationsDays: 365, transactionEvidenceDays: 730) }

    /// The member out of ``allowedDays``, if any.
    public var invalidField: String? {
        if let d = deletedRegistrationsDays, !Self.allowedDays.contains(d) { return "deletedRegistrationsDays" }
        if let d = transactionEvidenceDays, !Self.allowedDays.contains(d) { return "transactionEvidenceDays" }
        return nil
    }
}

/// A tenant's retention settings changed. Published by the registration service on topic
/// signet.registration with key `<tenant>`; the transaction service keeps
/// `transactionEvidenceDays` from it.
public struct TenantRetentionChanged: EventPayload {
    public static let eventType = "signet.registration.tenant.retention.changed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    public var deletedRegistrationsDays: Int?
    public var transactionEvidenceDays: Int?
    public var changedAt: Date

    public init(tenantId: String, settings: RetentionSettings, changedAt: Date) {
        self.tenantId = tenantId
        self.deletedRegistrationsDays = settings.deletedRegistrationsDays
        self.transactionEvidenceDays = settings.transactionEvidenceDays
        self.changedAt = changedAt
    }

    public var settings: RetentionSettings {
        RetentionSettings(deletedRegistrationsDays: deletedRegistrationsDays, transactionEvidenceDays: transactionEvidenceDays)
    }

    public static var fullExample: TenantRetentionChanged {
        TenantRetentionChanged(tenantId: "demo", settings: .fullExample, changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: TenantRetentionChanged {
        TenantRetentionChanged(tenantId: "demo", settings: RetentionSettings(), changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        if let field = settings.invalidField { throw EventDecodingError.invalidData(field) }
    }
}
