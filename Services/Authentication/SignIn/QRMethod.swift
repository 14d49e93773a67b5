import FoundationEssentials
import HTTPServer
import JSON
import Schema
import ServiceKit

/// `qr` as a sign-in step (cross-device): the challenge asks the oob-notification service
/// (internal call) for a QR session bound to this sign-in flow (and to its user, when the flow
/// has one) and answers the code, its payload and the watch token (the body may ask for a
/// shorter-lived code: `{"expiresInSeconds"}`, 30-120); the page shows the code and
/// polls verify (or watches the session's status on the oob service first). The user's bound
/// phone claims the code and accepts it, proving its device key (`Device-Proof`); verify then
/// reads the session: 409 `qr_pending` while it is not answered (not a failure: the guess is
/// given back), the outcome once it SUCCEEDED (the flow's user is the phone's user: a flow
/// without a username learns it here), 400 `qr_sign_in_failed` when it was rejected or expired
/// (a failure for anti-hammering). The session goes to the page that verifies, never to the
/// phone.
///
/// Not for transaction confirmations: the phone's answer is not evidence the transaction
/// service checks.
struct QRMethod: AuthenticationMethod {
    let name = "qr"
    let calls: InternalCalls
    /// The oob-notification service (`SIGNET_OOB_URL`).
    let oobURL: String
    /// A code lives this long unless the page asks for less (`expiresInSeconds`, at least
    /// ``minimumLifetime``, the oob service's shortest).
    static let lifetime = 120
    static let minimumLifetime = 30
    /// `pending` starts with this byte, then the QR session id.
    static let marker: UInt8 = 7

    func capacity(for user: UserFacts) -> Int { 1 }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        guard flow.transactionId == nil else { throw HTTPError(.methodUnavailable, detail: "qr does not confirm transactions.") }
        let asked = request.body.isEmpty ? QRChallengeRequest() : try request.decode(QRChallengeRequest.self)
        let lifetime = asked.expiresInSeconds ?? Self.lifetime
        guard (Self.minimumLifetime...Self.lifetime).contains(lifetime) else {
            throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds is \(Self.minimumLifetime)-\(Self.lifetime).")
        }
        let ask = QRSessionCreateRequest(purpose: QRSessionPurpose.authenticate, username: flow.username, signinId: flow.id, expiresInSeconds: lifetime)
        let created: QRSessionCreated
        do {
            created = try await calls.post("\(oobURL)/v1/internal/tenants/\(flow.tenant)/qr-sessions", ask, as: QRSessionCreated.self)
        } catch let error as HTTPError where error.code.status == 409 {
            throw HTTPError(.methodUnavailable, detail: "The user has no bound device to scan the code.")
        }
        let body = try JSONValueEncoder().encodeToBytes(created)
        return MethodChallenge(response: Array(body), pending: [Self.marker] + Array(created.qrSessionId.utf8))
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard pending.first == Self.marker else { throw HTTPError(.invalidHandle, detail: "Ask for the challenge first.") }
        let id = String(decoding: pending.dropFirst(), as: UTF8.self)
        struct Empty: Encodable {}
        let session = try await calls.post("\(oobURL)/v1/internal/tenants/\(flow.tenant)/qr-sessions/\(id)/read", Empty(), as: QRSessionResource.self)
        guard session.signinId == flow.id else { throw HTTPError(.qrSignInFailed, detail: "The QR session is another sign-in's.") }
        switch session.status {
        case QRSessionStatus.succeeded:
            guard let username = session.username else { throw HTTPError(.qrSignInFailed, detail: "The QR session names no user.") }
            if let expected = flow.username, !UsernameRules.identical(expected, username) {
                throw HTTPError(.qrSignInFailed, detail: "The phone is another user's.")
            }
            return MethodOutcome(username: username, userHandle: nil, credentialID: nil)
        case QRSessionStatus.pending, QRSessionStatus.scanned:
            throw HTTPError(.qrPending, detail: "The phone has not answered yet; poll again.")
        default:
            throw HTTPError(.qrSignInFailed, detail: "The QR sign-in was not accepted (\(session.status.lowercased())).")
        }
    }
}
