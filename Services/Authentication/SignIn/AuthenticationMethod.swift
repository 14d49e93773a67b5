import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
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

    /// A non-FIDO method (from registration's events).
    struct Method: Sendable {
        let id: String
        let type: String
        let piiRef: String?
        let masked: String?
        let sealedSecret: [UInt8]?
    }

    let username: String?
    /// Active credentials.
    let credentials: [Credential]
    /// Active non-FIDO methods.
    var methods: [Method] = []
    /// Active FIDO UAF keys: (AAID, base64url KeyID).
    var uafKeys: [(aaid: String, keyID: String)] = []
    /// The tenant's settings (which external methods it configured).
    var settings = AuthenticationSettings()
    /// Bound devices (from the oob service's events, ``DeviceReadModel``).
    var devices: [DeviceReadModel.Device] = []
    /// When a device counts as inactive (`SIGNET_OOB_INACTIVE_DAYS`).
    var deviceInactiveAfter: TimeInterval = 90 * 86_400
    let failures: AntiHammering.UserRecord
    let lastSignIn: Date?
    let registrationAnswer: String?
    let registrationAnsweredAt: Date?

    static let anonymous = UserFacts(
        username: nil, credentials: [], failures: AntiHammering.UserRecord(), lastSignIn: nil, registrationAnswer: nil, registrationAnsweredAt: nil)

    init(
        username: String?, credentials: [Credential], failures: AntiHammering.UserRecord, lastSignIn: Date?, registrationAnswer: String?,
        registrationAnsweredAt: Date?
    ) {
        self.username = username
        self.credentials = credentials
        self.failures = failures
        self.lastSignIn = lastSignIn
        self.registrationAnswer = registrationAnswer
        self.registrationAnsweredAt = registrationAnsweredAt
    }
}

/// One way of proving who one is, as a step of a sign-in flow. FIDO2 is the first; OTPs,
/// TOTP and external methods implement the same three questions.
protocol AuthenticationMethod: Sendable {
    /// The name rules use in sequences (`fido2`, `sms_otp`…).
    var name: String { get }

    /// Whether the method's step signs what it confirms (a transaction's dynamic-linking
    /// challenge), so that a sequence with it can confirm a transaction. Codes and external
    /// methods prove who the user is, not what they saw: `false`.
    var signsDetails: Bool { get }

    /// How many times `user` can complete this method in one flow (0 when they cannot at all:
    /// nothing registered). A sequence listing the method more often is removed.
    func capacity(for user: UserFacts) -> Int

    /// Starts the method: what the client needs (JSON), state the flow keeps until
    /// verification, and events to publish with it (a code to deliver) in the same transaction.
    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge

    /// Checks the client's answer against the pending state.
    ///
    /// - Throws: 400 problem+json naming the failed check (counted by anti-hammering).
    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome

    /// The pending state to keep after `verify` refused a wrong code (`code_mismatch`), or
    /// `nil` when the challenge is used up (the default: one answer per challenge).
    func pendingAfterMismatch(_ pending: [UInt8]) -> [UInt8]?

    /// Whether a refusal (400) of `verify` counts as a failure towards the user's standing
    /// (the default: every refusal). One that says nothing of the user's secret — the
    /// credential's state, or an authenticator model or algorithm the tenant's policy refuses
    /// — is not counted, as the direct sign-in routes do not count it: a user retrying with a
    /// suspended key, or a key the policy stopped accepting, does not lock their other ones.
    func countsAsGuess(_ refusal: HTTPError) -> Bool
}

extension AuthenticationMethod {
    var signsDetails: Bool { false }
    func pendingAfterMismatch(_ pending: [UInt8]) -> [UInt8]? { nil }
    func countsAsGuess(_ refusal: HTTPError) -> Bool { true }
}

/// A method's challenge.
struct MethodChallenge: Sendable {
    let response: [UInt8]
    let pending: [UInt8]
    var outbox: [EventEnvelope] = []
}

/// What a method's success establishes.
struct MethodOutcome: Sendable {
    let username: String
    /// base64url user handle, when known.
    let userHandle: String?
    /// base64url credential id for credential-based methods (may not be reused in the flow).
    let credentialID: String?
    /// For a transaction confirmation: what was signed.
    var evidence: SignedAssertionEvidence? = nil
}

/// FIDO2 / WebAuthn as a sign-in step: request options for the user's credentials not yet used
/// in this flow (so a sequence `["fido2", "fido2"]` takes two different authenticators), then
/// the assertion through ``AssertionCeremony``.
///
/// User verification is the tenant's FIDO policy's (asked for in the options, and enforced when
/// `required`); the `fido2_uv` variant always requires it, so that a rule can ask for a
/// biometric or PIN step: `"sequences": [["fido2_uv"]]`.
struct FIDO2Method: AuthenticationMethod {
    let ceremony: AssertionCeremony
    let name: String
    /// `required` for a step that must verify the user whatever the policy; `nil` follows it.
    let userVerification: String?
    let signsDetails = true

    init(ceremony: AssertionCeremony, name: String = "fido2", userVerification: String? = nil) {
        self.ceremony = ceremony
        self.name = name
        self.userVerification = userVerification
    }
    static let challengeLifetime: TimeInterval = 300

    /// The credential's state or the tenant's FIDO policy (``AssertionCeremony/requireUsable(_:tenant:)``'s
    /// refusals), not a guess.
    func countsAsGuess(_ refusal: HTTPError) -> Bool { !AssertionCeremony.unusableCredentialCodes.contains(refusal.code.rawValue) }

    func capacity(for user: UserFacts) -> Int {
        // Without a username, one discoverable credential identifies the user.
        user.username == nil ? 1 : user.credentials.count
    }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        // A transaction confirmation signs the dynamic-linking challenge of the details shown
        // (FIDO.DynamicLinkingChallenge); the pending state keeps only the nonce, and verify
        // derives the challenge again from the transaction as it is then.
        var challenge = SecureRandom.bytes(32)
        var pending = challenge
        if let id = flow.transactionId {
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: ceremony.context.pool)
            let nonce = SecureRandom.bytes(16)
            challenge = DynamicLinkingChallenge.derive(detailsHash: tx.detailsHash, nonce: nonce)
            pending = [1] + nonce
        }
        let allow = user.credentials.filter { !flow.usedCredentials.contains($0.id) }.map {
            CredentialDescriptorJSON(id: $0.id, transports: $0.transports)
        }
        if flow.username != nil, allow.isEmpty {
            throw HTTPError(
                .methodUnavailable,
                detail: "No credential of this user is left for this step.")
        }
        let policy = try await ceremony.fidoPolicies.policy(for: flow.tenant)
        let options = RequestOptionsJSON(
            challenge: Base64URL.encode(challenge), timeout: Int(Self.challengeLifetime * 1000), rpId: tenant.rpId, allowCredentials: allow,
            userVerification: policy.userVerification(requested: userVerification), hints: [], extensions: policy.extensions)
        let body = try JSONValueEncoder().encodeToBytes(FIDO2Challenge(publicKey: options))
        return MethodChallenge(response: Array(body), pending: pending)
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        let body = try request.decode(FIDO2VerifyRequest.self)
        let challenge: [UInt8]
        var nonce: [UInt8]?
        var transaction: PendingTransaction?
        if pending.count == 17, pending[0] == 1, let id = flow.transactionId {
            // The transaction must still be pending, and its details hash now is the one the
            // challenge commits to: an amended amount or payee no longer matches the signature.
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: ceremony.context.pool)
            nonce = Array(pending[1...])
            challenge = DynamicLinkingChallenge.derive(detailsHash: tx.detailsHash, nonce: nonce!)
            transaction = tx
        } else {
            guard pending.count == 32 else { throw HTTPError(.invalidHandle, detail: "No FIDO2 challenge is pending; ask for one.") }
            challenge = pending
        }
        let verified = try await ceremony.verify(
            body.credential, tenant: tenant, challenge: challenge, challengeExpiresAt: flow.expiresAt, expectedUsername: flow.username,
            userVerification: userVerification ?? "preferred", sessionID: nil, excluding: Set(flow.usedCredentials),
            securePaymentConfirmation: transaction != nil,
            logger: .init(label: "signet.authentication.fido2"))
        // Secure Payment Confirmation: what the browser displayed must be the transaction.
        if let transaction, let payment = try? CollectedClientData(bytes: verified.clientDataJSON).payment {
            guard payment.shows(currency: transaction.details.currency, amount: transaction.details.amount, payee: transaction.details.payee) else {
                throw HTTPError(.paymentDetailsMismatch, detail: "The payment the browser displayed is not this transaction's total or payee.")
            }
        }
        var outcome = MethodOutcome(username: verified.username, userHandle: Base64URL.encode(verified.userHandle), credentialID: verified.credentialID)
        if let nonce {
            outcome.evidence = SignedAssertionEvidence(
                credentialId: verified.credentialID, authenticatorData: Base64URL.encode(verified.authenticatorData),
                clientDataJSON: Base64URL.encode(verified.clientDataJSON), signature: Base64URL.encode(verified.signature),
                publicKeyCose: Base64URL.encode(verified.publicKeyCOSE), nonce: Base64URL.encode(nonce))
        }
        return outcome
    }
}

/// `…/methods/fido2/challenge` response.
struct FIDO2Challenge: Codable, Sendable {
    var publicKey: RequestOptionsJSON
}
