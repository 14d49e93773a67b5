import Crypto
import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
import Tokens
@testable import TransactionService

/// An `oob_push` confirmation step in the transaction service, over a scratch database: the
/// service knows the user's bound device and its user-auth key from the oob service's
/// `DeviceChanged` events, and verifies the device's signature over an approval of exactly the
/// transaction's details (id, display text, details hash, ESSENTIAL) with that key before it
/// issues a tcToken; a step that fails any check leaves the transaction PENDING.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct PushConfirmationTests {
    typealias Harness = ConfirmationSteps.Harness
    static let key = ConfirmationSteps.key
    static let deviceId = "dv_" + String(repeating: "ab", count: 16)

    /// The oob service's event: `phone` bound to `username` (nil: unbound), with its user-auth key
    /// unless `security` is false.
    static func device(
        _ h: Harness, _ phone: SoftwareDevice, username: String? = "alice", status: String = "ACTIVE", security: Bool = true, id: String = deviceId,
        at date: Date = Date()
    ) async throws {
        try await h.consume(
            DeviceChanged(
                tenantId: "shop", deviceId: id, status: status,
                subjectRef: username.map { h.context.configuration.subjectKey.ref(tenant: "shop", username: $0) }, platform: "ios",
                securityEnabled: security, userAuthKey: security ? try SoftwareDevice.jwkJSON(phone.userAuthKey) : nil, change: "bound",
                changedAt: date),
            source: .oob)
    }

    /// The evidence of an accepted transaction approval signed by `phone` (details as the
    /// authentication service asks for them, unless changed by `edit`).
    static func evidence(
        _ phone: SoftwareDevice, _ tx: TransactionResource, id: String = deviceId, withDeviceKey: Bool = false, decision: String = "ACCEPT",
        edit: (inout ApprovalDetails) -> Void = { _ in }
    ) throws -> SignedAssertionEvidence {
        var details = ApprovalDetails(
            level: "ESSENTIAL", action: "confirm_transaction", resource: tx.transactionId, text: tx.details.text,
            customFields: ["amount": tx.details.amount, "currency": tx.details.currency, "payee": tx.details.payee], transactionHash: tx.detailsHash)
        edit(&details)
        let approvalId = "ap_" + Hex.encode(SecureRandom.bytes(16))
        let canonical = Array(details.canonicalJSON.utf8)
        let message = ApprovalSignature.message(approvalId: approvalId, detailsHash: Base64URL.encode(SHA256.hash(canonical)), decision: decision, number: 42)
        let key = withDeviceKey ? phone.deviceKey : phone.userAuthKey
        let raw = try #require(ECDSASignature.raw(fromDER: try key.sign(message, algorithm: .es256), size: 32))
        return SignedAssertionEvidence(
            credentialId: id, authenticatorData: Base64URL.encode(canonical), clientDataJSON: Base64URL.encode(message), signature: Base64URL.encode(raw),
            publicKeyCose: try JWK(publicKey: try key.publicKey()).thumbprintBase64URL, nonce: approvalId, format: SignedAssertionEvidence.oobPushFormat)
    }

    static func decide(_ h: Harness, _ tx: TransactionResource, _ evidence: SignedAssertionEvidence) async throws -> TransactionResource {
        try await ConfirmationSteps.decide(h, tx, evidence, amr: "oob_push")
    }

    @Test func aBoundDevicesUserAuthSignatureOverTheDetailsConfirmsTheTransaction() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await ConfirmationSteps.seed(h)
        let phone = try SoftwareDevice()
        try await Self.device(h, phone)
        let tx = try await ConfirmationSteps.create(h)
        let confirmed = try await Self.decide(h, tx, try Self.evidence(phone, tx))
        #expect(confirmed.status == "CONFIRMED")
        let claims = try await ConfirmationSteps.tcTokenClaims(h, try #require(confirmed.tcToken))
        #expect(claims.subject == "alice" && claims[claim: "txn_hash"] == .string(tx.detailsHash))
        #expect(claims[claim: "amr"] == .array(["oob_push"]) && claims[claim: "cid"] == .string(Self.deviceId))
        await ConfirmationSteps.expectEvidence(h, tx, format: "oob_push")
    }

    /// The figures shown beside the text (amount, currency, payee) are the transaction's: an
    /// approval that showed others, over the right hash, confirms nothing.
    @Test func anApprovalShowingOtherFiguresConfirmsNothing() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await ConfirmationSteps.seed(h)
        let phone = try SoftwareDevice()
        try await Self.device(h, phone)
        let tx = try await ConfirmationSteps.create(h)
        for edit: (inout ApprovalDetails) -> Void in [
            { $0.customFields = ["amount": "1.00", "currency": tx.details.currency, "payee": tx.details.payee] },
            { $0.customFields = ["amount": tx.details.amount, "currency": tx.details.currency, "payee": "Someone Else"] },
            { $0.customFields = nil },
        ] {
            #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx, edit: edit)).status == "PENDING")
        }
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "CONFIRMED")
    }

    /// A decision made in time but arriving after the expiry (broker lag, before the expirer's
    /// pass) is ignored: the RP reads the transaction as EXPIRED from then on and may have made
    /// another for the same payment.
    @Test func aDecisionArrivingAfterTheExpiryConfirmsNothing() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await ConfirmationSteps.seed(h)
        let phone = try SoftwareDevice()
        try await Self.device(h, phone)
        let tx = try await ConfirmationSteps.create(h)
        try await h.context.pool.withConnection { conn in
            try await conn.query("UPDATE transactions SET expires_at = now() - interval '1 second' WHERE id = \(tx.transactionId)")
        }
        let late = try await ConfirmationSteps.decide(h, tx, try Self.evidence(phone, tx), amr: "oob_push", decidedAt: Date().addingTimeInterval(-5))
        #expect(late.status != "CONFIRMED" && late.tcToken == nil, "\(late.status)")
    }

    @Test func aStepThatIsNotTheBoundDevicesSignatureOverTheseDetailsConfirmsNothing() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await ConfirmationSteps.seed(h)
        let phone = try SoftwareDevice()
        let tx = try await ConfirmationSteps.create(h)

        // The service does not know the device yet.
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "PENDING")
        try await Self.device(h, phone)
        // Signed with the device key (no user presence), not the user-auth key.
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx, withDeviceKey: true)).status == "PENDING")
        // Another text shown, another amount's hash, another transaction, a lower level.
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx) { $0.text = "Pay €1 to ACME" }).status == "PENDING")
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx) { $0.transactionHash = Base64URL.encode(SHA256.hash([1])) }).status == "PENDING")
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx) { $0.resource = "tx_" + String(repeating: "0", count: 32) }).status == "PENDING")
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx) { $0.level = "ENTRY" }).status == "PENDING")
        // A REJECT decision, a message signed over other bytes than the details given, a forged signature.
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx, decision: "REJECT")).status == "PENDING")
        var swapped = try Self.evidence(phone, tx)
        swapped.authenticatorData = try Self.evidence(phone, tx) { $0.customFields = nil }.authenticatorData
        #expect(try await Self.decide(h, tx, swapped).status == "PENDING")
        var forged = try Self.evidence(phone, tx)
        forged.signature = Base64URL.encode(SecureRandom.bytes(64))
        #expect(try await Self.decide(h, tx, forged).status == "PENDING")
        // Another phone's key under this device's id.
        #expect(try await Self.decide(h, tx, try Self.evidence(try SoftwareDevice(), tx)).status == "PENDING")
        // The device bound to another user, then unbound.
        try await Self.device(h, phone, username: "bob")
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "PENDING")
        try await Self.device(h, phone, username: nil)
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "PENDING")
        // Bound to alice again, the proper step confirms it: the refusals above were the checks'.
        try await Self.device(h, phone)
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "CONFIRMED")
    }

    /// Events are applied by their time: a late, older binding does not replace the current one.
    @Test func anOlderDeviceEventDoesNotReplaceANewerOne() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await ConfirmationSteps.seed(h)
        let phone = try SoftwareDevice()
        let now = Date()
        try await Self.device(h, phone, at: now)
        // A late event of the device bound to bob, older than the current binding to alice.
        try await Self.device(h, phone, username: "bob", at: now.addingTimeInterval(-60))
        let tx = try await ConfirmationSteps.create(h)
        #expect(try await Self.decide(h, tx, try Self.evidence(phone, tx)).status == "CONFIRMED")
    }
}
