import Crypto
import FIDO
import Foundation
import HTTPServer
import Schema
import ServiceKit

/// What a sign-in flow knows of its user when it chooses sequences and runs methods.
struct UserFacts: Sendable {
    struct Credential: Sendable {
        /// base64url credential id.
        let id: String
        let aaguid: String?
        let backupEligible: Bool
        let backupState: Bool
        let transports: [String]
        let userHandle: String
    }

    let username: String?
    /// Active credentials.
    let credentials: [Credential]
    let failures: AntiHammering.UserRecord
    let lastSignIn: Date?
    let registrationAnswer: String?
    let registrationAnsweredAt: Date?

    static let anonymous = UserFacts(
        username: nil, credentials: [], failures: AntiHammering.UserRecord(), lastSignIn: nil, registrationAnswer: nil, registrationAnsweredAt: nil)
}

/// One way of proving who one is, as a step of a sign-in flow. FIDO2 is the first; OTPs,
/// TOTP and external methods implement the same three questions.
protocol AuthenticationMethod: Sendable {
    /// The name rules use in sequences (`fido2`, `sms_otp`…).
    var name: String { get }

    /// How many times `user` can complete this method in one flow (0 when they cannot at all:
    /// nothing registered). A sequence listing the method more often is removed.
    func capacity(for user: UserFacts) -> Int

    /// Starts the method: what the client needs (JSON), and state the flow keeps, sealed in its
    /// row, until verification.
    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> (response: [UInt8], pending: [UInt8])

    /// Checks the client's answer against the pending state.
    ///
    /// - Throws: 400 problem+json naming the failed check (counted by anti-hammering).
    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome
}

/// What a method's success establishes.
struct MethodOutcome: Sendable {
    let username: String
    /// base64url user handle, when known.
    let userHandle: String?
    /// base64url credential id for credential-based methods (may not be reused in the flow).
    let credentialID: String?
}

/// FIDO2 / WebAuthn as a sign-in step: request options for the user's credentials not yet used
/// in this flow (so a sequence `["fido2", "fido2"]` takes two different authenticators), then
/// the assertion through ``AssertionCeremony``.
struct FIDO2Method: AuthenticationMethod {
    let ceremony: AssertionCeremony
    let name = "fido2"
    static let challengeLifetime: TimeInterval = 300

    func capacity(for user: UserFacts) -> Int {
        // Without a username, one discoverable credential identifies the user.
        user.username == nil ? 1 : user.credentials.count
    }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> (response: [UInt8], pending: [UInt8]) {
        let challenge = SecureRandom.bytes(32)
        let allow = user.credentials.filter { !flow.usedCredentials.contains($0.id) }.map {
            CredentialDescriptorJSON(id: $0.id, transports: $0.transports)
        }
        if flow.username != nil, allow.isEmpty {
            throw HTTPError(
                ProblemCode("method_unavailable", status: 409, title: "Method unavailable"),
                detail: "No credential of this user is left for this step.")
        }
        let options = RequestOptionsJSON(
            challenge: Base64URL.encode(challenge), timeout: Int(Self.challengeLifetime * 1000), rpId: tenant.rpId, allowCredentials: allow,
            userVerification: "preferred", hints: [])
        let body = try JSONEncoder().encode(FIDO2Challenge(publicKey: options))
        return (Array(body), challenge)
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard pending.count == 32 else { throw HTTPError(.invalidHandle, detail: "No FIDO2 challenge is pending; ask for one.") }
        let body = try request.decode(FIDO2VerifyRequest.self)
        let verified = try await ceremony.verify(
            body.credential, tenant: tenant, challenge: pending, challengeExpiresAt: flow.expiresAt, expectedUsername: flow.username,
            userVerification: "preferred", sessionID: nil, excluding: Set(flow.usedCredentials), logger: .init(label: "signet.authentication.fido2"))
        return MethodOutcome(username: verified.username, userHandle: Base64URL.encode(verified.userHandle), credentialID: verified.credentialID)
    }
}

/// `…/methods/fido2/challenge` response.
struct FIDO2Challenge: Codable, Sendable {
    var publicKey: RequestOptionsJSON
}
