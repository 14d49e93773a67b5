import Crypto
import FoundationEssentials
import JSON
import Postgres
import Schema
import ServiceKit
import Tokens

/// The transaction service's own record of each bound device's user-auth key, kept from the
/// oob-notification service's `DeviceChanged` events (which carry the public key): an
/// `oob_push` confirmation step (``SignedAssertionEvidence/oobPushFormat``) is accepted only
/// when the device is active, bound to the transaction's user (by subject reference) and has
/// a user-auth key, and when that key, from this record and not from the evidence, verifies
/// the device's signature over an approval whose details are the transaction's: its id as the
/// resource, its display text, its details hash, the `ESSENTIAL` level.
///
/// Events of one tenant come in order (key `tenant`); a row is replaced only by a change at
/// least as recent.
enum DeviceKeyOwners {
    /// The approval action the authentication service's `oob_push` step asks for a transaction.
    static let action = "confirm_transaction"

    static var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(DeviceChanged.self) { e, _, conn in
            // Only what a confirmation needs: an active, bound device with a user-auth key.
            // Anything else (unbound, revoked, security disabled) removes the row.
            guard e.status == "ACTIVE", let owner = e.subjectRef, let key = e.userAuthKey else {
                try await conn.query("DELETE FROM device_key_owners WHERE tenant_id = \(e.tenantId) AND device_id = \(e.deviceId)")
                return
            }
            try await conn.query(
                """
                INSERT INTO device_key_owners (tenant_id, device_id, subject_ref, user_auth_key, changed_at)
                VALUES (\(e.tenantId), \(e.deviceId), \(owner), \(key), \(e.changedAt))
                ON CONFLICT (tenant_id, device_id) DO UPDATE SET subject_ref = EXCLUDED.subject_ref, user_auth_key = EXCLUDED.user_auth_key,
                    changed_at = EXCLUDED.changed_at
                WHERE device_key_owners.changed_at <= EXCLUDED.changed_at
                """)
        }
        return h
    }

    /// Whether `step` (an `oob_push` evidence step) was signed by the user-auth key of an
    /// active device bound to the user whose subject reference is `subjectRef`, over an
    /// approval of the transaction `transactionId` with `details` and `detailsHash`.
    static func verifies(
        _ step: SignedAssertionEvidence, of subjectRef: String, tenant: String, transactionId: String, detailsHash: [UInt8], details: TransactionDetails,
        on conn: PostgresConnection
    ) async throws -> Bool {
        guard step.format == SignedAssertionEvidence.oobPushFormat, DeviceID.isValid(step.credentialId) else { return false }
        guard let row = try await conn.query(
            "SELECT subject_ref, user_auth_key FROM device_key_owners WHERE tenant_id = \(tenant) AND device_id = \(step.credentialId)"
        ).first, let owner = row.string("subject_ref"), let keyText = row.string("user_auth_key"), ConstantTime.equals(owner, subjectRef)
        else { return false }
        return Self.verifies(step, userAuthKey: keyText, transactionId: transactionId, detailsHash: detailsHash, details: details)
    }

    /// The offline check of an `oob_push` step against the device's user-auth key (a public
    /// JWK as JSON text): the approval's canonical details are those of a transaction approval
    /// for `transactionId` (``ApprovalDetails``: level `ESSENTIAL`, action
    /// `confirm_transaction`, resource the transaction id, text its display text,
    /// transactionHash its details hash), the message is `ACCEPT` of that approval over those
    /// details' hash, the key is the one the step names, and the signature verifies.
    static func verifies(_ step: SignedAssertionEvidence, userAuthKey keyText: String, transactionId: String, detailsHash: [UInt8], details: TransactionDetails)
        -> Bool
    {
        guard ApprovalID.isValid(step.nonce), let detailsBytes = Base64URL.decode(step.authenticatorData), detailsBytes.count <= 16_384,
            let message = Base64URL.decode(step.clientDataJSON), message.count <= 512, let raw = Base64URL.decode(step.signature), raw.count == 64,
            let der = ECDSASignature.der(fromRaw: raw), let key = try? JWK(json: keyText), let publicKey = try? key.publicKey(),
            ConstantTime.equals(key.thumbprintBase64URL, step.publicKeyCose)
        else { return false }
        // The details the device was shown and signed: this transaction's, nothing else.
        guard case .object(let shown)? = try? JSONParser.parse(detailsBytes),
            shown["level"] == .string(ApprovalLevel.essential.rawValue), shown["action"] == .string(action),
            shown["resource"] == .string(transactionId), shown["text"] == .string(details.text),
            shown["transactionHash"] == .string(Base64URL.encode(detailsHash)),
            // The figures the phone showed beside the text are the transaction's own: the user
            // read these, not the hash.
            shown["customFields"]
                == .object(["amount": .string(details.amount), "currency": .string(details.currency), "payee": .string(details.payee)])
        else { return false }
        // The message: ACCEPT of this approval over the hash of exactly these details.
        let lines = String(decoding: message, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count == 5, lines[0] == "signet-approval-v1", lines[1] == step.nonce, lines[2] == Base64URL.encode(SHA256.hash(detailsBytes)),
            lines[3] == "ACCEPT", lines[4].isEmpty || (lines[4].count <= 3 && lines[4].utf8.allSatisfy { (0x30...0x39).contains($0) })
        else { return false }
        return publicKey.verify(signature: der, message: message, algorithm: .es256)
    }
}
