import Crypto
import FIDO
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit
import Tokens
import JSON

/// Applies users' decisions from the authentication service. A confirmation is checked again
/// here before anything is issued: the transaction is still PENDING and unexpired, the details
/// hash signed is the current one, and every signed step verifies offline (its client data
/// carries the dynamic-linking challenge of the details and its nonce, and its signature
/// verifies under the credential's key; a FIDO UAF step's fcParams carry that challenge, its
/// TRANSACTION_CONTENT_HASH is the hash of the details' display text, and it verifies under the
/// UAF key this service holds, see ``UAFKeyOwners``; an `oob_push` step is the user's bound
/// device's signature over an approval of these details, verified with the user-auth key this
/// service holds, see ``DeviceKeyOwners``). Each WebAuthn and UAF step's challenge is spent then
/// (``ConsumedEvidence``): steps that confirmed one transaction never confirm another with the
/// same details. Then the transaction is CONFIRMED with its tcToken and evidence, in one
/// transaction with its event and the spent challenges; anything else leaves it as it was.
struct TransactionDecisions: Sendable {
    let keys: TCTokenKeys
    let issuer: String
    /// Names the user in `TransactionChanged` (never the username).
    let subjectKey: SubjectKey
    let logger: Logger
    /// How long a tcToken is valid (the RP verifies it when it executes the transaction).
    static let tokenLifetime: TimeInterval = 3600

    var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(TransactionDecision.self) { e, _, conn in try await apply(e, on: conn) }
        return h
    }

    func apply(_ e: TransactionDecision, on conn: PostgresConnection) async throws {
        let now = Date()
        var tx: StoredTransaction
        do {
            tx = try await StoredTransaction.load(e.transactionId, tenant: e.tenantId, on: conn, forUpdate: true)
        } catch {
            logger.warning("decision for an unknown transaction ignored")
            return
        }
        // Still pending, decided in time, and not past its expiry now: a decision that arrives
        // after the expiry (broker lag, before the expirer's pass marks the row) is ignored, as
        // the RP already reads the transaction as EXPIRED and may have created another.
        guard tx.status == "PENDING", tx.expiresAt > e.decidedAt, tx.expiresAt > now else {
            logger.notice("decision for a transaction no longer pending ignored", metadata: ["signet.transaction.status": .string(tx.status)])
            return
        }
        tx.revision += 1
        tx.updatedAt = now
        switch e.decision {
        case "rejected":
            // The authentication service rejects only for a sign-in that verified a step as the
            // transaction's user (its amr), and for the details that user saw: a decision
            // without a step, or for details since amended, changes nothing.
            guard !e.amr.isEmpty, Base64URL.decode(e.detailsHash) == tx.detailsHash else {
                logger.warning("rejection refused: no verified step, or other details than the transaction's")
                return
            }
            tx.status = "REJECTED"
        case "confirmed":
            let webAuthn = e.assertions.filter { $0.format == nil }
            let uaf = e.assertions.filter { $0.format == SignedAssertionEvidence.uafFormat }
            let push = e.assertions.filter { $0.format == SignedAssertionEvidence.oobPushFormat }
            guard Base64URL.decode(e.detailsHash) == tx.detailsHash, webAuthn.count + uaf.count + push.count == e.assertions.count, !e.assertions.isEmpty,
                webAuthn.isEmpty || Self.verifies(webAuthn, detailsHash: tx.detailsHash, details: tx.details)
            else {
                logger.warning("confirmation refused: the signed details do not match the transaction")
                return
            }
            // Every signing credential is the transaction's user's own, active, with the key
            // verified above (this service's record, not the event's word). The records know
            // owners by subject reference.
            let owner = subjectKey.ref(tenant: tx.tenant, username: tx.username)
            for a in webAuthn {
                guard let key = Base64URL.decode(a.publicKeyCose),
                    try await CredentialOwners.isActive(a.credentialId, of: owner, publicKeyCOSE: key, tenant: tx.tenant, on: conn)
                else {
                    logger.warning("confirmation refused: a signing credential is not an active credential of the transaction's user")
                    return
                }
            }
            // A FIDO UAF step: its key is the user's own and active in this service's record,
            // and its assertion signs the dynamic-linking challenge and the displayed text.
            for a in uaf {
                guard try await UAFKeyOwners.verifies(a, of: owner, tenant: tx.tenant, detailsHash: tx.detailsHash, details: tx.details, on: conn)
                else {
                    logger.warning("confirmation refused: a UAF step does not verify with an active key of the transaction's user")
                    return
                }
            }
            // An oob_push step: the user's bound device signed, with its user-auth key (this
            // service's record), an approval of exactly this transaction's details.
            for a in push {
                guard try await DeviceKeyOwners.verifies(
                    a, of: owner, tenant: tx.tenant, transactionId: tx.id, detailsHash: tx.detailsHash, details: tx.details, on: conn)
                else {
                    logger.warning("confirmation refused: an oob_push step does not verify with the user-auth key of a bound device of the transaction's user")
                    return
                }
            }
            // Each WebAuthn and UAF step's challenge confirms one transaction: the details hash
            // does not name the transaction, so the same steps replayed in a decision for another
            // pending transaction of the user with the same details would verify as well.
            guard try await ConsumedEvidence.spend(e.assertions, transactionId: tx.id, tenant: tx.tenant, detailsHash: tx.detailsHash, at: now, on: conn)
            else {
                logger.warning("confirmation refused: a signed step already confirmed another transaction")
                return
            }
            let ring = try await keys.ring(for: tx.tenant)
            let jti = SecureRandom.token(byteCount: 16)
            let claims = JWTClaims(
                issuer: issuer, subject: tx.username, audience: [tx.tenant], expiresAt: now.addingTimeInterval(Self.tokenLifetime), issuedAt: now,
                id: jti,
                extra: [
                    "txn": .string(tx.id), "txn_hash": .string(Base64URL.encode(tx.detailsHash)), "amount": .string(tx.details.amount),
                    "currency": .string(tx.details.currency), "payee": .string(tx.details.payee), "amr": .array(e.amr.map(JSONValue.string)),
                    "cid": .string(e.assertions.last?.credentialId ?? ""),
                ])
            let token = try ring.signer.sign(claims, type: "tc+jwt")
            let evidence = TransactionEvidence(
                transactionId: tx.id, displayed: tx.details.canonicalJSON, detailsHash: Base64URL.encode(tx.detailsHash), assertions: e.assertions,
                amr: e.amr, tcToken: token, confirmedAt: now)
            tx.status = "CONFIRMED"
            tx.tcToken = token
            tx.evidence = String(decoding: try JSONValueEncoder().encodeToBytes(evidence), as: UTF8.self)
            try await conn.query("UPDATE transactions SET tc_jti = \(jti) WHERE id = \(tx.id)")
        default:
            // The event's schema admits no other kind (it does not decode).
            return
        }
        try await tx.update(on: conn)
        try await Outbox.enqueue(tx.changedEvent(subjectKey), source: .transaction, subject: tx.tenant, key: tx.tenant, on: conn)
        logger.info("transaction decided", metadata: ["signet.transaction.status": .string(tx.status)])
    }

    /// Whether every signed step commits to `detailsHash` and verifies.
    static func verifies(_ assertions: [SignedAssertionEvidence], detailsHash: [UInt8], details: TransactionDetails) -> Bool {
        !assertions.isEmpty && assertions.allSatisfy { a in
            guard let nonce = Base64URL.decode(a.nonce), nonce.count == 16, let clientData = Base64URL.decode(a.clientDataJSON),
                let authData = Base64URL.decode(a.authenticatorData), let signature = Base64URL.decode(a.signature),
                let cose = Base64URL.decode(a.publicKeyCose), let key = try? COSEKey(bytes: cose),
                let collected = try? CollectedClientData(bytes: clientData)
            else { return false }
            let challenge = DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: nonce)
            guard collected.type == "webauthn.get" || collected.type == "payment.get", Base64URL.decode(collected.challenge) == challenge else { return false }
            // Secure Payment Confirmation: the displayed total and payee are the transaction's.
            if let p = collected.payment {
                guard p.shows(currency: details.currency, amount: details.amount, payee: details.payee) else { return false }
            } else if collected.type == "payment.get" {
                return false
            }
            return key.verify(signature: signature, message: authData + SHA256.hash(clientData))
        }
    }
}
