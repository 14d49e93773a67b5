import FoundationEssentials

/// An RP asks a user to approve something on a bound device
/// (`POST /v1/tenants/{tenant}/approvals`): exactly one of `username` (any of the user's
/// devices) and `deviceId` (that device, which must be bound).
public struct ApprovalCreateRequest: Codable, Sendable, Equatable {
    public var username: String?
    public var deviceId: String?
    /// `ENTRY` (the device key signs), `ESSENTIAL` (the user-auth key signs: user presence) or
    /// `EXECUTIVE` (the user-auth key signs and the user has a valid identity document).
    public var level: String
    public var action: String
    public var resource: String
    /// Shown on the device and in the push notification (no personal data, please). Dynamic
    /// text: refused (`dynamic_text_not_allowed`) unless the tenant's app settings allow it
    /// (``TenantAppSettings/allowDynamicText``); without it the push text comes from the
    /// tenant's push template in ``locale``.
    public var text: String?
    public var customFields: [String: String]?
    /// 10-3600 (default 120).
    public var expiresInSeconds: Int?
    /// When true the RP's page shows ``ApprovalResource/number`` and the device must send it
    /// back; a wrong number rejects the approval.
    public var numberMatching: Bool?
    /// Where the outcome is POSTed when the approval finishes: a signed JWT
    /// (`typ approval-callback+jwt`, the tenant's device identifier key, claim `approval` the
    /// ``ApprovalResource``), retried with backoff. Its origin must be one of the tenant's.
    public var callbackUrl: String?
    /// Internal route only (the authentication service's `oob_push` step of a transaction
    /// confirmation): base64url SHA-256 of the transaction's canonical details
    /// (``TransactionDetails/canonicalJSON``), which becomes part of the approval's details and
    /// so of what the device signs. Needs the `ESSENTIAL` level.
    public var transactionHash: String?
    /// When true, a user who cannot answer at `level` (an EXECUTIVE approval, no valid identity
    /// document) may accept at their highest level: the approval is `ACCEPTED` with that
    /// `decidedLevel`. Default false: such an answer is refused and the approval stays in progress.
    public var allowLowerLevel: Bool?
    /// The locale of the push text when it comes from the tenant's push templates (no
    /// `text`): `fr-CA` falls back to `fr`, then `en`, then the built-in text.
    public var locale: String?

    public init(
        username: String? = nil, deviceId: String? = nil, level: String, action: String, resource: String, text: String? = nil,
        customFields: [String: String]? = nil, expiresInSeconds: Int? = nil, numberMatching: Bool? = nil, callbackUrl: String? = nil,
        transactionHash: String? = nil, allowLowerLevel: Bool? = nil, locale: String? = nil
    ) {
        self.username = username
        self.deviceId = deviceId
        self.level = level
        self.action = action
        self.resource = resource
        self.text = text
        self.customFields = customFields
        self.expiresInSeconds = expiresInSeconds
        self.numberMatching = numberMatching
        self.callbackUrl = callbackUrl
        self.transactionHash = transactionHash
        self.allowLowerLevel = allowLowerLevel
        self.locale = locale
    }

    public static var fullExample: ApprovalCreateRequest {
        ApprovalCreateRequest(
            username: "user-4711", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", level: "ESSENTIAL", action: "login", resource: "web banking",
            text: "Sign in to Example Bank?", customFields: ["channel": "web"], expiresInSeconds: 120, numberMatching: true,
            callbackUrl: "https://bank.example/approvals/callback", transactionHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            allowLowerLevel: false, locale: "fr-CA")
    }
}

/// The levels an approval can ask for, lowest first.
public enum ApprovalLevel: String, Sendable, CaseIterable, Comparable {
    /// Signed by the device key (possession of the bound device).
    case entry = "ENTRY"
    /// Signed by the user-auth key (possession and user presence).
    case essential = "ESSENTIAL"
    /// Also a valid (unexpired) identity document registered for the user
    /// (`POST /v1/tenants/{t}/devices/{id}/identity-documents`).
    case executive = "EXECUTIVE"

    var rank: Int {
        switch self {
        case .entry: 1
        case .essential: 2
        case .executive: 3
        }
    }

    public static func < (a: ApprovalLevel, b: ApprovalLevel) -> Bool { a.rank < b.rank }
}

/// The statuses of an approval.
public enum ApprovalStatus {
    public static let inProgress = "IN_PROGRESS"
    public static let accepted = "ACCEPTED"
    public static let acceptedAtHigherLevel = "ACCEPTED_AT_HIGHER_LEVEL"
    public static let rejected = "REJECTED"
    public static let expired = "EXPIRED"
    public static let cancelled = "CANCELLED"
    public static let failed = "FAILED"
    public static let all = [inProgress, accepted, acceptedAtHigherLevel, rejected, expired, cancelled, failed]
}

/// What the device is asked to approve, in the canonical form whose SHA-256 is the approval's
/// `detailsHash`: a JSON object of `action`, `customFields` (an object, keys in ascending byte
/// order), `level`, `resource`, `text` and `transactionHash` as present, keys in ascending byte
/// order, no whitespace, strings escaped as ``TransactionDetails/canonicalJSON`` escapes them.
public struct ApprovalDetails: Sendable, Equatable {
    public var level: String
    public var action: String
    public var resource: String
    public var text: String?
    public var customFields: [String: String]?
    /// For a transaction confirmed by push: base64url SHA-256 of the transaction's canonical
    /// details (so the device's signature over the approval commits to them).
    public var transactionHash: String?

    public init(level: String, action: String, resource: String, text: String?, customFields: [String: String]?, transactionHash: String? = nil) {
        self.level = level
        self.action = action
        self.resource = resource
        self.text = text
        self.customFields = customFields
        self.transactionHash = transactionHash
    }

    static func sortedByBytes(_ members: [(String, String)]) -> [(String, String)] {
        members.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
    }

    public var canonicalJSON: String {
        var members: [(String, String)] = [
            ("action", TransactionDetails.quote(action)), ("level", TransactionDetails.quote(level)), ("resource", TransactionDetails.quote(resource)),
        ]
        if let text { members.append(("text", TransactionDetails.quote(text))) }
        if let transactionHash { members.append(("transactionHash", TransactionDetails.quote(transactionHash))) }
        if let customFields {
            let inner = Self.sortedByBytes(customFields.map { ($0.key, TransactionDetails.quote($0.value)) })
            members.append(("customFields", "{" + inner.map { "\(TransactionDetails.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"))
        }
        return "{" + Self.sortedByBytes(members).map { "\(TransactionDetails.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}

/// The bytes a device signs to decide an approval: UTF-8 of
/// `signet-approval-v1 LF approvalId LF detailsHash LF decision LF number`, where `decision`
/// is `ACCEPT` or `REJECT` and `number` the decimal number the user chose (empty without
/// number matching). ES256 over these bytes, the signature sent as base64url r‖s (64 bytes).
public enum ApprovalSignature {
    public static func message(approvalId: String, detailsHash: String, decision: String, number: Int?) -> [UInt8] {
        Array("signet-approval-v1\n\(approvalId)\n\(detailsHash)\n\(decision)\n\(number.map(String.init) ?? "")".utf8)
    }
}

/// An approval as its RP sees it.
public struct ApprovalResource: Codable, Sendable, Equatable {
    public var approvalId: String
    public var status: String
    public var level: String
    public var username: String
    /// The device asked, when the RP named one.
    public var deviceId: String?
    public var action: String
    public var resource: String
    public var text: String?
    public var customFields: [String: String]?
    /// base64url SHA-256 of the canonical details (``ApprovalDetails``).
    public var detailsHash: String
    public var numberMatching: Bool
    /// The number the RP's page shows (number matching only).
    public var number: Int?
    public var createdAt: Date
    public var expiresAt: Date
    public var updatedAt: Date
    /// The device that decided, and the level its signature proved.
    public var decidedDeviceId: String?
    public var decidedLevel: String?
    /// Why it was rejected or failed (`user_rejected`, `number_mismatch`).
    public var reason: String?
    /// For a transaction confirmed by push: the transaction details hash the approval carries.
    public var transactionHash: String?

    public init(
        approvalId: String, status: String, level: String, username: String, deviceId: String?, action: String, resource: String, text: String?,
        customFields: [String: String]?, detailsHash: String, numberMatching: Bool, number: Int?, createdAt: Date, expiresAt: Date, updatedAt: Date,
        decidedDeviceId: String?, decidedLevel: String?, reason: String?, transactionHash: String? = nil
    ) {
        self.approvalId = approvalId
        self.status = status
        self.level = level
        self.username = username
        self.deviceId = deviceId
        self.action = action
        self.resource = resource
        self.text = text
        self.customFields = customFields
        self.detailsHash = detailsHash
        self.numberMatching = numberMatching
        self.number = number
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
        self.decidedDeviceId = decidedDeviceId
        self.decidedLevel = decidedLevel
        self.reason = reason
        self.transactionHash = transactionHash
    }

    public static var fullExample: ApprovalResource {
        ApprovalResource(
            approvalId: "ap_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "REJECTED", level: "ENTRY", username: "user-4711",
            deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", action: "login", resource: "web banking", text: "Sign in to Example Bank?",
            customFields: ["channel": "web"], detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", numberMatching: true, number: 42,
            createdAt: Date(timeIntervalSince1970: 1_764_000_000), expiresAt: Date(timeIntervalSince1970: 1_764_000_120),
            updatedAt: Date(timeIntervalSince1970: 1_764_000_030), decidedDeviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", decidedLevel: "ESSENTIAL",
            reason: "number_mismatch", transactionHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U")
    }
}

/// An approval as the device sees it: what to show and what to sign, never the matching number.
public struct DeviceApproval: Codable, Sendable, Equatable {
    public var approvalId: String
    public var status: String
    public var level: String
    public var action: String
    public var resource: String
    public var text: String?
    public var customFields: [String: String]?
    public var detailsHash: String
    /// When true the user types the number the RP's page shows, and the device signs it.
    public var numberMatching: Bool
    public var createdAt: Date
    public var expiresAt: Date
    /// For a transaction confirmation: base64url SHA-256 of the transaction's canonical details,
    /// part of the details the device signs (`text` is the transaction's display text).
    public var transactionHash: String?

    public init(
        approvalId: String, status: String, level: String, action: String, resource: String, text: String?, customFields: [String: String]?,
        detailsHash: String, numberMatching: Bool, createdAt: Date, expiresAt: Date, transactionHash: String? = nil
    ) {
        self.approvalId = approvalId
        self.status = status
        self.level = level
        self.action = action
        self.resource = resource
        self.text = text
        self.customFields = customFields
        self.detailsHash = detailsHash
        self.numberMatching = numberMatching
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.transactionHash = transactionHash
    }

    public static var fullExample: DeviceApproval {
        DeviceApproval(
            approvalId: "ap_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "IN_PROGRESS", level: "ENTRY", action: "login", resource: "web banking",
            text: "Sign in to Example Bank?", customFields: ["channel": "web"], detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            numberMatching: true, createdAt: Date(timeIntervalSince1970: 1_764_000_000), expiresAt: Date(timeIntervalSince1970: 1_764_000_120),
            transactionHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U")
    }
}

/// A device's pending approvals.
public struct DeviceApprovalList: Codable, Sendable, Equatable {
    public var approvals: [DeviceApproval]
    public init(approvals: [DeviceApproval]) { self.approvals = approvals }
    public static var fullExample: DeviceApprovalList { DeviceApprovalList(approvals: [DeviceApproval.fullExample]) }
}

/// The device's decision: `ACCEPT` or `REJECT`, signed (``ApprovalSignature``) by the key named
/// in `signedWith` (`deviceKey` or `userAuthKey`).
public struct ApprovalDecisionRequest: Codable, Sendable, Equatable {
    public var decision: String
    public var signedWith: String
    /// base64url r‖s.
    public var signature: String
    /// The number the user typed (number matching).
    public var number: Int?

    public init(decision: String, signedWith: String, signature: String, number: Int? = nil) {
        self.decision = decision
        self.signedWith = signedWith
        self.signature = signature
        self.number = number
    }

    public static var fullExample: ApprovalDecisionRequest {
        ApprovalDecisionRequest(
            decision: "ACCEPT", signedWith: "userAuthKey",
            signature: "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4_QEFCQ0RFRg", number: 42)
    }
}

/// The `oob_push` sign-in method's challenge: the approval sent to the user's devices, and the
/// number the sign-in page shows for the user to type on the device. The page then polls
/// `…/methods/oob_push/verify` (409 `approval_pending` until the device answered).
public struct OOBPushChallenge: Codable, Sendable, Equatable {
    public var approvalId: String
    public var number: Int?
    public var expiresAt: Date

    public init(approvalId: String, number: Int?, expiresAt: Date) {
        self.approvalId = approvalId
        self.number = number
        self.expiresAt = expiresAt
    }
}

/// What the device signed when it decided an approval, for the authentication service's
/// `oob_push` step of a transaction confirmation (internal route
/// `POST /v1/internal/tenants/{tenant}/approvals/{approvalId}/evidence`): the canonical details
/// (``ApprovalDetails/canonicalJSON``), the exact message signed (``ApprovalSignature``), the
/// raw ES256 signature and the device that signed with its user-auth key. The transaction
/// service verifies it again with its own record of the device's key.
public struct ApprovalDecisionEvidence: Codable, Sendable, Equatable {
    public var approvalId: String
    public var deviceId: String
    /// `deviceKey` or `userAuthKey`.
    public var signedWith: String
    /// base64url of the canonical details JSON.
    public var details: String
    /// base64url of the message signed.
    public var message: String
    /// base64url r‖s.
    public var signature: String
    /// base64url JWK thumbprint (RFC 7638) of the device's key named by `signedWith`, as it is now.
    public var keyThumbprint: String

    public init(approvalId: String, deviceId: String, signedWith: String, details: String, message: String, signature: String, keyThumbprint: String) {
        self.approvalId = approvalId
        self.deviceId = deviceId
        self.signedWith = signedWith
        self.details = details
        self.message = message
        self.signature = signature
        self.keyThumbprint = keyThumbprint
    }

    public static var fullExample: ApprovalDecisionEvidence {
        ApprovalDecisionEvidence(
            approvalId: "ap_0f1e2d3c4b5a69788796a5b4c3d2e1f0", deviceId: "dv_0f1e2d3c4b5a69788796a5b4c3d2e1f0", signedWith: "userAuthKey",
            details: "eyJhY3Rpb24iOiJjb25maXJtX3RyYW5zYWN0aW9uIn0", message: "c2lnbmV0LWFwcHJvdmFsLXYx",
            signature: "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4_QEFCQ0RFRg",
            keyThumbprint: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U")
    }
}
