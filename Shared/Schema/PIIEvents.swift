import FoundationEssentials

/// A value in the pii service's vault that nothing refers to any more, to be deleted: a store
/// whose answer was lost, a reference its service failed to record, a value replaced. Sent
/// through the sender's outbox, so the withdrawal survives the vault being unreachable at that
/// moment and the sender's restart; the vault deletes the value and remembers the reference (a
/// store under it still in flight is refused). Carries the reference only, never the value or
/// the user.
public struct VaultWithdrawalRequested: EventPayload {
    public static let eventType = "signet.pii.value.withdrawal.requested.v1"
    public static let topic = Topic.piiRequests

    public var tenantId: String
    /// The vault's reference of the value (``PIIReferenceText``).
    public var piiRef: String
    public var requestedAt: Date

    public init(tenantId: String, piiRef: String, requestedAt: Date) {
        self.tenantId = tenantId
        self.piiRef = piiRef
        self.requestedAt = requestedAt
    }

    public static var fullExample: VaultWithdrawalRequested {
        VaultWithdrawalRequested(tenantId: "demo", piiRef: "pii_0f1e2d3c4b5a69788796a5b4c3d2e1f0", requestedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: VaultWithdrawalRequested { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard PIIReferenceText.isWellFormed(piiRef) else { throw EventDecodingError.invalidData("piiRef") }
    }
}
