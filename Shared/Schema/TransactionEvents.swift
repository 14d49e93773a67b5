import FoundationEssentials

/// A transaction was created or changed (amended, confirmed, rejected, expired, cancelled).
/// The authentication service keeps what confirmation needs from it. Keeps the highest
/// `revision`.
public struct TransactionChanged: EventPayload {
    public static let eventType = "signet.transaction.changed.v2"
    public static let topic = Topic.transaction

    public var tenantId: String
    public var transactionId: String
    public var revision: Int
    /// `PENDING`, `CONFIRMED`, `REJECTED`, `EXPIRED` or `CANCELLED`.
    public var status: String
    /// The user who must confirm (the flow is bound to them), by opaque subject reference
    /// (``SubjectRefFormat``), never by username.
    public var subjectRef: String
    public var details: TransactionDetails
    /// base64url SHA-256 of `details.canonicalJSON`.
    public var detailsHash: String
    public var expiresAt: Date
    public var changedAt: Date
    // No tcToken: a bearer token stays out of Kafka. The authentication service fetches it from
    // the transaction service (an internal call) when the app that confirmed asks.

    public init(
        tenantId: String, transactionId: String, revision: Int, status: String, subjectRef: String, details: TransactionDetails, detailsHash: String,
        expiresAt: Date, changedAt: Date
    ) {
        self.tenantId = tenantId
        self.transactionId = transactionId
        self.revision = revision
        self.status = status
        self.subjectRef = subjectRef
        self.details = details
        self.detailsHash = detailsHash
        self.expiresAt = expiresAt
        self.changedAt = changedAt
    }

    public static let statuses = ["PENDING", "CONFIRMED", "REJECTED", "EXPIRED", "CANCELLED"]

    public static var fullExample: TransactionChanged {
        TransactionChanged(
            tenantId: "demo", transactionId: "tx_0f1e2d3c4b5a69788796a5b4c3d2e1f0", revision: 1, status: "PENDING", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc",
            details: TransactionDetails(
                text: "Pay €385.00 to ACME Ltd", amount: "385.00", currency: "EUR", payee: "ACME Ltd", type: "payment",
                batch: [.init(payee: "ACME Ltd", amount: "385.00")],
                images: [TransactionImage.example]),
            detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", expiresAt: Date(timeIntervalSince1970: 1_764_000_300),
            changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: TransactionChanged {
        var e = fullExample
        e.details.type = nil
        e.details.batch = nil
        e.details.images = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard TransactionID.isValid(transactionId) else { throw EventDecodingError.invalidData("transactionId") }
        guard revision >= 1 else { throw EventDecodingError.invalidData("revision") }
        guard TransactionChanged.statuses.contains(status) else { throw EventDecodingError.invalidData("status") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        if details.violation() != nil { throw EventDecodingError.invalidData("details") }
        guard isBase64URL(detailsHash, maxBytes: 32) else { throw EventDecodingError.invalidData("detailsHash") }
    }
}

/// Transaction ids: `tx_` and 32 hex digits.
public enum TransactionID {
    public static func isValid(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("tx_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// The user's decision on a transaction, from the sign-in flow that confirmed or rejected it.
/// A confirmation carries what was signed, so that the transaction service checks it again,
/// keeps it as evidence and issues the tcToken.
public struct TransactionDecision: EventPayload {
    public static let eventType = "signet.authentication.transaction.decided.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    public var transactionId: String
    /// `confirmed` or `rejected`.
    public var decision: String
    /// The details hash the user signed.
    public var detailsHash: String
    /// The sign-in flow's id; for a confirmation through the plain UAF API
    /// (`…/uaf/authentications` with `{"transactionId"}`), the id of the session it issued.
    public var signinId: String
    /// Methods completed, and each fido2, uaf or oob_push step's signed data.
    public var amr: [String]
    public var assertions: [SignedAssertionEvidence]
    public var decidedAt: Date

    public init(
        tenantId: String, transactionId: String, decision: String, detailsHash: String, signinId: String, amr: [String],
        assertions: [SignedAssertionEvidence], decidedAt: Date
    ) {
        self.tenantId = tenantId
        self.transactionId = transactionId
        self.decision = decision
        self.detailsHash = detailsHash
        self.signinId = signinId
        self.amr = amr
        self.assertions = assertions
        self.decidedAt = decidedAt
    }

    public static var fullExample: TransactionDecision {
        TransactionDecision(
            tenantId: "demo", transactionId: "tx_0f1e2d3c4b5a69788796a5b4c3d2e1f0", decision: "confirmed",
            detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", signinId: "si_4f1c2a9b8e7d6c5b4a3f2e1d0c9b8a7f", amr: ["fido2"],
            assertions: [
                SignedAssertionEvidence(
                    credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", authenticatorData: "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MdAAAAAA",
                    clientDataJSON: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0", signature: "MEUCIQ", publicKeyCose: "pQECAyYgASFYIA",
                    nonce: "AAECAwQFBgcICQoLDA0ODw")
            ],
            decidedAt: Date(timeIntervalSince1970: 1_764_000_060))
    }
    public static var minimalExample: TransactionDecision {
        var e = fullExample
        e.decision = "rejected"
        e.assertions = []
        e.amr = []
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard TransactionID.isValid(transactionId) else { throw EventDecodingError.invalidData("transactionId") }
        guard ["confirmed", "rejected"].contains(decision) else { throw EventDecodingError.invalidData("decision") }
        guard isBase64URL(detailsHash, maxBytes: 32) else { throw EventDecodingError.invalidData("detailsHash") }
        guard signinId.utf8.count <= 64, amr.count <= 16, assertions.count <= 16 else { throw EventDecodingError.invalidData("assertions") }
        if decision == "confirmed", assertions.isEmpty { throw EventDecodingError.invalidData("assertions") }
        for a in assertions {
            guard a.format == nil || a.format == SignedAssertionEvidence.uafFormat || a.format == SignedAssertionEvidence.oobPushFormat else {
                throw EventDecodingError.invalidData("assertions.format")
            }
            if a.format == SignedAssertionEvidence.oobPushFormat {
                guard DeviceID.isValid(a.credentialId), ApprovalID.isValid(a.nonce), a.aaid == nil else { throw EventDecodingError.invalidData("assertions.oob_push") }
                continue
            }
            if a.format != nil, a.aaid.map(UAFValidation.isAAID) != true || a.keyEncoding == nil || a.signatureAlgorithm == nil {
                throw EventDecodingError.invalidData("assertions.aaid")
            }
        }
    }
}
