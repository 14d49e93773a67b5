import FoundationEssentials

/// A tenant was created or its settings changed. Consumers keep the highest `revision`.
public struct TenantUpserted: EventPayload {
    public static let eventType = "signet.registration.tenant.upserted.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    public var displayName: String
    public var rpId: String
    public var origins: [String]
    /// Increases with every change of the tenant; replays of older revisions are ignored.
    public var revision: Int
    public var updatedAt: Date

    public init(tenantId: String, displayName: String, rpId: String, origins: [String], revision: Int, updatedAt: Date) {
        self.tenantId = tenantId
        self.displayName = displayName
        self.rpId = rpId
        self.origins = origins
        self.revision = revision
        self.updatedAt = updatedAt
    }

    public static var fullExample: TenantUpserted {
        TenantUpserted(tenantId: "demo", displayName: "Demo Bank", rpId: "localhost", origins: ["http://localhost:8080"],
                       revision: 1, updatedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: TenantUpserted { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard TenantValidation.isValidRPID(rpId) else { throw EventDecodingError.invalidData("rpId") }
        guard !origins.isEmpty, origins.count <= TenantValidation.maxOrigins, origins.allSatisfy(TenantValidation.isValidOrigin)
        else { throw EventDecodingError.invalidData("origins") }
        guard (1...TenantValidation.maxDisplayName).contains(displayName.count) else { throw EventDecodingError.invalidData("displayName") }
        guard revision >= 1 else { throw EventDecodingError.invalidData("revision") }
    }
}

/// An RP API key was issued for a tenant. Carries the key's SHA-256, never the key.
public struct TenantAPIKeyCreated: EventPayload {
    public static let eventType = "signet.registration.tenant.apikey.created.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    public var keyId: String
    /// Lower-case hex SHA-256 of the key.
    public var keyHash: String
    public var createdAt: Date

    public init(tenantId: String, keyId: String, keyHash: String, createdAt: Date) {
        self.tenantId = tenantId
        self.keyId = keyId
        self.keyHash = keyHash
        self.createdAt = createdAt
    }

    public static var fullExample: TenantAPIKeyCreated {
        TenantAPIKeyCreated(tenantId: "demo", keyId: "k_3f9a1c2b7d4e5f60", keyHash: String(repeating: "ab", count: 32),
                            createdAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: TenantAPIKeyCreated { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard TenantValidation.isValidKeyID(keyId) else { throw EventDecodingError.invalidData("keyId") }
        guard keyHash.utf8.count == 64, keyHash.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
        else { throw EventDecodingError.invalidData("keyHash") }
    }
}

/// An RP API key was revoked; it stops working on every service.
public struct TenantAPIKeyRevoked: EventPayload {
    public static let eventType = "signet.registration.tenant.apikey.revoked.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    public var keyId: String
    public var revokedAt: Date

    public init(tenantId: String, keyId: String, revokedAt: Date) {
        self.tenantId = tenantId
        self.keyId = keyId
        self.revokedAt = revokedAt
    }

    public static var fullExample: TenantAPIKeyRevoked {
        TenantAPIKeyRevoked(tenantId: "demo", keyId: "k_3f9a1c2b7d4e5f60", revokedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: TenantAPIKeyRevoked { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard TenantValidation.isValidKeyID(keyId) else { throw EventDecodingError.invalidData("keyId") }
    }
}

/// Every event payload type, for registries and schema tests.
public enum EventCatalog {
    public static let payloadTypes: [any EventPayload.Type] = [
        TenantUpserted.self, TenantAPIKeyCreated.self, TenantAPIKeyRevoked.self,
        CredentialRegistered.self, CredentialStatusChanged.self, CredentialRenamed.self, FIDOPolicyChanged.self,
        AuthenticationSucceeded.self, CredentialCloneSuspected.self, SessionIssued.self, SessionRevoked.self, MethodLockChanged.self,
        AuthenticationPolicyChanged.self, TransactionChanged.self, TransactionDecision.self,
        MethodChanged.self, DeliveryRequested.self, DeliveryStatusChanged.self,
        // Appended, so that EventFuzz's corpus (a first byte choosing the type) keeps its meaning.
        UAFAuthenticatorRegistered.self, UAFAuthenticatorStatusChanged.self, UAFSettingsChanged.self,
        UserPurgeRequested.self, ErasurePartCompleted.self, TenantRetentionChanged.self,
        DeviceChanged.self, ApprovalChanged.self, QRSessionChanged.self,
        VaultWithdrawalRequested.self,
    ]
}
