import Crypto
import FIDO
import FoundationEssentials
import Postgres
import Schema
import ServiceKit

/// The dynamic-linking challenges that have confirmed a transaction (`consumed_evidence`): each
/// WebAuthn or FIDO UAF step's challenge is spent once per tenant, in the transaction that
/// confirms. The details hash does not name the transaction, so a step that confirmed one
/// transaction verifies just as well for another of the same user with byte-identical details
/// (a decision event replayed with the other's id); a spent challenge refuses that. An
/// `oob_push` step needs no row: the device signed the transaction id itself.
///
/// The challenge is spent, not the signature: ECDSA signatures are malleable, so a second
/// valid signature over the same challenge is easy to make from the first.
///
/// A row matters while the key that signed its step could sign a confirmation again: it is
/// purged once this service's record no longer holds that key, or holds it deleted (see
/// ``purge(limit:on:)``), not after a transaction's lifetime, since a transaction created later
/// with the same details (a repeated payment) would take the old evidence again. The rows hold
/// no personal data (a hash, the transaction id, the key's id), and are erased with the user's
/// transactions (``TransactionUserData``).
enum ConsumedEvidence {
    /// The challenge `step` signed, for a WebAuthn (`format` nil) or UAF step whose nonce is
    /// readable; nil for other steps.
    static func challenge(of step: SignedAssertionEvidence, detailsHash: [UInt8]) -> [UInt8]? {
        guard step.format == nil || step.format == SignedAssertionEvidence.uafFormat, let nonce = Base64URL.decode(step.nonce) else { return nil }
        return DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: nonce)
    }

    /// Spends the challenge of every WebAuthn and UAF step in `steps` (verified before, against
    /// `detailsHash`) for `transactionId`. All or none: when one was spent already (by another
    /// confirmation), what this call inserted is removed again and it answers false.
    ///
    /// - Important: Call it inside the transaction that confirms, so the rows commit with the
    ///   confirmation. A concurrent spend of the same challenge waits on the primary key and then
    ///   finds it spent.
    static func spend(
        _ steps: [SignedAssertionEvidence], transactionId: String, tenant: String, detailsHash: [UInt8], at now: Date, on conn: PostgresConnection
    ) async throws -> Bool {
        var spent: [[UInt8]] = []
        for step in steps {
            guard let challenge = challenge(of: step, detailsHash: detailsHash) else { continue }
            // Two steps of one confirmation may share a nonce: one row.
            if spent.contains(challenge) { continue }
            let keyID = Base64URL.decode(step.credentialId) ?? []
            let inserted = try await conn.query(
                """
                INSERT INTO consumed_evidence (tenant_id, challenge, transaction_id, aaid, key_id, consumed_at)
                VALUES (\(tenant), \(PostgresBytes(challenge)), \(transactionId), \(step.format == nil ? nil : step.aaid), \(PostgresBytes(keyID)), \(now))
                ON CONFLICT DO NOTHING
                """
            ).affectedRows
            guard inserted == 1 else {
                for challenge in spent {
                    try await conn.query("DELETE FROM consumed_evidence WHERE tenant_id = \(tenant) AND challenge = \(PostgresBytes(challenge))")
                }
                return false
            }
            spent.append(challenge)
        }
        return true
    }

    /// Deletes, in batches (``BatchedDelete``), the rows whose signing key this service no longer
    /// holds, or holds deleted: no step signed by it verifies any more (a suspended key may be
    /// resumed, and keeps its rows). `conn` must not be inside a transaction.
    ///
    /// - Returns: rows deleted.
    @discardableResult
    static func purge(limit: Int = BatchedDelete.batchSize, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM consumed_evidence WHERE (tenant_id, challenge) IN (
                SELECT c.tenant_id, c.challenge FROM consumed_evidence c
                WHERE CASE WHEN c.aaid IS NULL THEN NOT EXISTS (
                        SELECT 1 FROM credential_owners o WHERE o.tenant_id = c.tenant_id AND o.credential_id = c.key_id AND o.status <> 'deleted')
                    ELSE NOT EXISTS (
                        SELECT 1 FROM uaf_key_owners u WHERE u.tenant_id = c.tenant_id AND u.aaid = c.aaid AND u.key_id = c.key_id AND u.status <> 'deleted')
                    END
                LIMIT \(limit))
            """)
    }
}
