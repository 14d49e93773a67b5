import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit

/// `oob_push` as a sign-in step: the challenge asks the oob-notification service (internal
/// call) for an ENTRY approval with number matching on the user's bound devices, which pushes
/// it; the sign-in page shows the number and polls verify, which reads the approval: 409
/// `approval_pending` while the user has not answered (not a failure: the guess is given
/// back), the outcome once accepted, 400 `oob_push_rejected` when rejected, wrong-numbered,
/// expired or cancelled (a failure for anti-hammering).
///
/// Not for transaction confirmations yet: the approval's signature is not evidence the
/// transaction service checks.
struct OOBPushMethod: AuthenticationMethod {
    let name = "oob_push"
    let calls: InternalCalls
    /// The oob-notification service (`SIGNET_OOB_URL`).
    let oobURL: String
    static let lifetime = 120
    /// `pending` starts with this byte, then the approval id.
    static let marker: UInt8 = 6

    func capacity(for user: UserFacts) -> Int { user.username == nil ? 0 : 1 }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        guard let username = flow.username, flow.transactionId == nil else {
            throw HTTPError(.methodUnavailable, detail: "oob_push needs a username and does not confirm transactions.")
        }
        let ask = ApprovalCreateRequest(
            username: username, level: ApprovalLevel.entry.rawValue, action: "sign_in", resource: tenant.rpId, text: "Sign in to \(tenant.displayName)?",
            expiresInSeconds: Self.lifetime, numberMatching: true)
        let approval: ApprovalResource
        do {
            approval = try await calls.post("\(oobURL)/v1/internal/tenants/\(flow.tenant)/approvals", ask, as: ApprovalResource.self)
        } catch let error as HTTPError where error.code.status == 409 {
            throw HTTPError(.methodUnavailable, detail: "The user has no bound device that can answer.")
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
            return MethodOutcome(username: username, userHandle: nil, credentialID: nil)
        case ApprovalStatus.inProgress:
            throw HTTPError(.approvalPending, detail: "The device has not answered yet; poll again.")
        default:
            throw HTTPError(.oobPushRejected, detail: "The approval was not accepted (\(approval.status.lowercased())).")
        }
    }
}
