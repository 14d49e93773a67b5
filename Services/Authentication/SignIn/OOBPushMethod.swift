import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// `oob_push` as a sign-in step: the challenge asks the oob-notification service (internal
/// call) for an ENTRY approval with number matching on the user's bound devices, which pushes
/// it; the sign-in page shows the number and polls verify, which reads the approval: 409
/// `approval_pending` while the user has not answered (not a failure: the guess is given
/// back), the outcome once accepted, 400 `oob_push_rejected` when rejected, wrong-numbered,
/// expired or cancelled (a failure for anti-hammering).
///
/// A transaction confirmation: the approval is `ESSENTIAL` (the user-auth key signs, with user
/// presence), its action `confirm_transaction`, its resource the transaction id, its text the
/// transaction's display text, its custom fields the amount, currency and payee, and its
/// `transactionHash` the transaction's details hash, so that the device's signature commits to
/// the details. Once accepted, verify checks that the transaction still has those details and
/// hands the signed decision (``ApprovalDecisionEvidence``) on as the step's evidence
/// (``SignedAssertionEvidence/oobPushFormat``), which the transaction service verifies with its
/// own record of the device's user-auth key before it issues the tcToken.
struct OOBPushMethod: AuthenticationMethod {
    let name = "oob_push"
    let calls: InternalCalls
    /// The oob-notification service (`SIGNET_OOB_URL`).
    let oobURL: String
    /// This service's database (the transaction read model).
    let pool: PostgresPool
    let signsDetails = true
    static let lifetime = 120
    /// `pending` starts with this byte, then the approval id.
    static let marker: UInt8 = 6
    /// The approval action of a transaction confirmation (the transaction service checks it).
    static let confirmAction = "confirm_transaction"

    /// Offered only to a named user with a bound, active device (the ``DeviceReadModel`` from
    /// the oob service's events): without one no push can reach anybody.
    func capacity(for user: UserFacts) -> Int { user.username == nil || user.devices.isEmpty ? 0 : 1 }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        guard let username = flow.username else {
            throw HTTPError(.methodUnavailable, detail: "oob_push needs a username.")
        }
        var ask = ApprovalCreateRequest(
            username: username, level: ApprovalLevel.entry.rawValue, action: "sign_in", resource: tenant.rpId, text: "Sign in to \(tenant.displayName)?",
            expiresInSeconds: Self.lifetime, numberMatching: true)
        if let id = flow.transactionId {
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: pool)
            ask.level = ApprovalLevel.essential.rawValue
            ask.action = Self.confirmAction
            ask.resource = tx.id
            ask.text = tx.details.text
            ask.customFields = ["amount": tx.details.amount, "currency": tx.details.currency, "payee": tx.details.payee]
            ask.transactionHash = Base64URL.encode(tx.detailsHash)
            ask.expiresInSeconds = max(10, min(Self.lifetime, Int(tx.expiresAt.timeIntervalSinceNow)))
        }
        let approval: ApprovalResource
        do {
            approval = try await calls.post("\(oobURL)/v1/internal/tenants/\(flow.tenant)/approvals", ask, as: ApprovalResource.self)
        } catch let error as HTTPError where error.code.status == 409 {
            throw HTTPError(
                .methodUnavailable,
                detail: flow.transactionId == nil
                    ? "The user has no bound device that can answer." : "The user has no bound device with a user-auth key to confirm the transaction.")
        }
        let body = try JSONValueEncoder().encodeToBytes(OOBPushChallenge(approvalId: approval.approvalId, number: approval.number, expiresAt: approval.expiresAt))
        return MethodChallenge(response: Array(body), pending: [Self.marker] + Array(approval.approvalId.utf8))
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard pending.first == Self.marker, let username = flow.username else { throw HTTPError(.invalidHandle, detail: "Ask for the challenge first.") }
        let id = String(decoding: pending.dropFirst(), as: UTF8.self)
        struct Empty: Encodable {}
        let approval = try await calls.post("\(oobURL)/v1/internal/tenants/\(flow.tenant)/approvals/\(id)/read", Empty(), as: ApprovalResource.self)
        guard UsernameRules.identical(approval.username, username) else { throw HTTPError(.oobPushRejected, detail: "The approval is another user's.") }
        switch approval.status {
        case ApprovalStatus.accepted, ApprovalStatus.acceptedAtHigherLevel:
            var outcome = MethodOutcome(username: username, userHandle: nil, credentialID: nil)
            if let transactionId = flow.transactionId {
                outcome.evidence = try await evidence(of: approval, transactionId: transactionId, tenant: flow.tenant)
            }
            return outcome
        case ApprovalStatus.inProgress:
            throw HTTPError(.approvalPending, detail: "The device has not answered yet; poll again.")
        default:
            throw HTTPError(.oobPushRejected, detail: "The approval was not accepted (\(approval.status.lowercased())).")
        }
    }

    /// The signed decision of an accepted transaction approval, as a confirmation step's
    /// evidence, once the transaction is still pending with the details the device signed
    /// (an amended amount or payee no longer matches: 400 `transaction_details_changed`).
    func evidence(of approval: ApprovalResource, transactionId: String, tenant: String) async throws -> SignedAssertionEvidence {
        let tx = try await PendingTransaction.load(transactionId, tenant: tenant, pool: pool)
        guard approval.action == Self.confirmAction, approval.resource == tx.id, let signed = approval.transactionHash,
            ConstantTime.equals(signed, Base64URL.encode(tx.detailsHash))
        else {
            throw HTTPError(.transactionDetailsChanged, detail: "The device approved other details than the transaction has now.")
        }
        struct Empty: Encodable {}
        let decision = try await calls.post(
            "\(oobURL)/v1/internal/tenants/\(tenant)/approvals/\(approval.approvalId)/evidence", Empty(), as: ApprovalDecisionEvidence.self)
        guard decision.approvalId == approval.approvalId, decision.signedWith == "userAuthKey", DeviceID.isValid(decision.deviceId) else {
            throw HTTPError(.oobPushRejected, detail: "The approval was not signed with a user-auth key.")
        }
        // The key's thumbprint names the key the transaction service must find on its record
        // of the device; the key itself comes from that record.
        guard let device = approval.decidedDeviceId, device == decision.deviceId else {
            throw HTTPError(.oobPushRejected, detail: "The approval's deciding device is unknown.")
        }
        return SignedAssertionEvidence(
            credentialId: decision.deviceId, authenticatorData: decision.details, clientDataJSON: decision.message, signature: decision.signature,
            publicKeyCose: decision.keyThumbprint, nonce: approval.approvalId, format: SignedAssertionEvidence.oobPushFormat)
    }
}
